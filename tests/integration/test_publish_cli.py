"""`cdcgen generation publish` against a real Cassandra: the DAG's checks, by name.

The source is the emulator's raft tables under a prefix of their own, with two committed
generations; the lake partitions are those two generations' extractions. The command
runs in-process, configured the way a person configures it: ``CDCGEN_*`` variables.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from cdcgen.adapters.cql import CqlClient
from cdcgen.cli import main
from cdcgen.core.errors import ExitCode
from cdcgen.core.generation import SourceMode
from cdcgen.core.time import to_millis
from cdcgen.core.topology_json import description_to_json
from cdcgen.generation_lake.description_columns import DescriptionColumns
from cdcgen.generation_lake.generation_writes import write_generation
from cdcgen.schema import SourceSchema
from cdcgen_dev.emulator import SandboxCluster
from cdcgen_dev.emulator.schema_setup import drop_keyspaces

if TYPE_CHECKING:
    from tests.conftest import CassandraHandle

pytestmark = pytest.mark.integration

PREFIX = "t_publish_cli_"


def published(client: CqlClient, keyspace: str) -> dict[datetime, int]:
    """What a consumer sees: each timestamp row, with its generation's streams rows."""
    stamps = client.session.execute(f"SELECT time FROM {keyspace}.cdc_generation_timestamps")
    seen = {}
    for row in stamps:
        rows = client.session.execute(
            f"SELECT range_end FROM {keyspace}.cdc_streams_descriptions_v2 WHERE time = %s",
            (row.time,),
        )
        seen[row.time.replace(tzinfo=UTC)] = len(list(rows))
    return seen


def test_publish_applies_the_dags_checks_and_force_only_republishes(
    client: CqlClient,
    cassandra_single: CassandraHandle,
    target_keyspace: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    schema = SourceSchema(PREFIX)
    drop_keyspaces(client, schema)
    step = timedelta(milliseconds=100)
    sandbox = SandboxCluster(client, schema, ring_delay=step, leeway=step)
    partitions, stamps, ids, descriptions = [], [], [], []
    for seed in (1, 2):
        join = sandbox.join_node(SourceMode.RAFT, shards=2, vnodes=2, seed=seed)
        assert join.generation is not None and join.description is not None
        columns = DescriptionColumns.from_description(join.description)
        artifact = write_generation(
            tmp_path / "lake", columns, join.generation.timestamp, join.generation.id
        )
        partitions.append(str(artifact.directory.path))
        stamps.append(join.generation.timestamp)
        ids.append(join.generation.id)
        descriptions.append(join.description)
    environment = {
        "CDCGEN_SOURCE_KEYSPACE_PREFIX": PREFIX,
        "CDCGEN_SOURCE_MODE": "raft",
        "CDCGEN_TARGET_KEYSPACE": target_keyspace,
        "CDCGEN_CONTACT_POINTS": ",".join(cassandra_single.contact_points),
        "CDCGEN_PORT": str(cassandra_single.port),
    }
    for variable, value in environment.items():
        monkeypatch.setenv(variable, value)

    def publish(description: str, stamp: datetime, *more: str) -> tuple[int, str]:
        when = str(to_millis(stamp))
        argv = ["generation", "publish", "--description", description, "--timestamp", when]
        status = main([*argv, *more])
        out, err = capsys.readouterr()
        return status, out if status == 0 else err

    # The newer generation first: an older one is not public yet.
    status, said = publish(partitions[1], stamps[1])
    assert status == ExitCode.TERMINAL and "older generation" in said
    assert stamps[0].isoformat(timespec="milliseconds") in said
    # A partition under another generation's timestamp.
    status, said = publish(partitions[0], stamps[1])
    assert status == ExitCode.TERMINAL and "the description is that of generation" in said
    # A timestamp the source never committed.
    other = tmp_path / "description.json"
    other.write_text(json.dumps(description_to_json(descriptions[0])))
    status, said = publish(str(other), stamps[0] + timedelta(milliseconds=1))
    assert status == ExitCode.TERMINAL and "is committed on the source" in said
    assert published(client, target_keyspace) == {}  # nothing of any of them reached the target

    for partition, stamp, generation_id in zip(partitions, stamps, ids, strict=True):
        status, said = publish(partition, stamp)
        assert status == 0, said
        assert json.loads(said)["generation_id"] == generation_id
    entries = [len(description) for description in descriptions]
    assert published(client, target_keyspace) == dict(zip(stamps, entries, strict=True))
    status, said = publish(partitions[0], stamps[0])
    assert status == ExitCode.TERMINAL and "already published; force" in said
    status, said = publish(partitions[0], stamps[0], "--force")
    assert status == 0, said
    # --force re-publishes; it does not lift the other checks.
    status, said = publish(partitions[0], stamps[1], "--force")
    assert status == ExitCode.TERMINAL and "the description is that of generation" in said
