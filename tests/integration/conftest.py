"""Fixtures the integration modules share: one CQL client per module on the sandbox
node, and a target keyspace of a test's own that is dropped afterwards."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

from cdcgen.adapters.cql import CqlClient, connect

if TYPE_CHECKING:
    from tests.conftest import CassandraHandle


@pytest.fixture(scope="module")
def client(cassandra_single: CassandraHandle) -> Iterator[CqlClient]:
    """A module's tests reuse one session: connecting costs more than most checks."""
    cql = connect(cassandra_single.contact_points, cassandra_single.port)
    yield cql
    cql.close()


@pytest.fixture
def target_keyspace(client: CqlClient) -> Iterator[str]:
    """A keyspace name no other test publishes to, so tests never see each other's rows;
    dropped afterwards whatever the test created in it."""
    name = f"pub_{uuid.uuid4().hex[:10]}"
    yield name
    client.session.execute(f"DROP KEYSPACE IF EXISTS {name}")
