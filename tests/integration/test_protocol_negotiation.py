"""The native protocol version is negotiated once per cluster and process
(cdcgen.adapters.cql): the driver offers its newest version and steps down, warning,
each time Cassandra 5 (or ScyllaDB) refuses one; the clients after the first start at
the version the first settled on, and say nothing. Real Cassandra, the real driver."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest

from cdcgen.adapters import cql

pytestmark = pytest.mark.integration

DOWNGRADE = "Downgrading core protocol version"


@pytest.fixture
def nothing_negotiated() -> Iterator[None]:
    """This process as a fresh task starts it: no version known yet (other tests of the
    session may have connected already)."""
    saved = dict(cql._NEGOTIATED)
    cql._NEGOTIATED.clear()
    yield
    cql._NEGOTIATED.clear()
    cql._NEGOTIATED.update(saved)


def downgrades(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [
        record.getMessage()
        for record in caplog.records
        if record.name.startswith("cassandra") and DOWNGRADE in record.getMessage()
    ]


def test_the_second_client_of_a_process_starts_at_the_version_the_first_negotiated(
    contact_points: tuple[str, ...], caplog: pytest.LogCaptureFixture, nothing_negotiated: None
) -> None:
    caplog.set_level(logging.WARNING, logger="cassandra")
    first = cql.connect(contact_points)
    try:
        negotiated = first.cluster.protocol_version
        first.execute("SELECT release_version FROM system.local")
    finally:
        first.close()
    stepped = downgrades(caplog)
    # The driver offers more than Cassandra 5 speaks: the first client steps down.
    assert stepped, "no downgrade: the driver and the server agreed at once"
    assert cql.protocol_version_for(contact_points, 9042) == negotiated
    caplog.clear()
    second = cql.connect(contact_points)
    try:
        assert second.cluster.protocol_version == negotiated
        second.execute("SELECT release_version FROM system.local")
    finally:
        second.close()
    assert downgrades(caplog) == [], "the second client negotiated again"


def test_a_configured_version_is_kept_and_another_cluster_negotiates_its_own(
    contact_points: tuple[str, ...], nothing_negotiated: None
) -> None:
    client = cql.connect(contact_points, protocol_version=4)
    try:
        assert client.cluster.protocol_version == 4
    finally:
        client.close()
    assert cql.protocol_version_for(contact_points, 9042, configured=5) == 5
    assert cql.protocol_version_for(("127.0.0.9",), 9042) is None
