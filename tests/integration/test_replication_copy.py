"""A bootstrap's Spark copy, killed part-way, resumes to the same sink state.

The source is a plain ``orders`` table of a few thousand rows, each with its own write
time, some with a TTL, some with set elements; the lake's coverage of it is recorded
directly in the changes pipeline's progress (the copy reads no change, only the
guarantee that changes from its snapshot time on will be there). The sink holds a row
the source does not have, so the bootstrap must replace it (``--replace``).

``cdcgen replication bootstrap`` runs in a process of its own, its Spark job on a local
session there; once the sink records some of the copy's token ranges and before it
records all, the process and everything it started are SIGKILLed. Then:

* an apply refuses the half-copied sink, naming the bootstrap that resumes it;
* the next bootstrap (without ``--replace``: the rows it finds are the copy's own)
  resumes at the first attempt's snapshot time, copies exactly the rows of the ranges
  not recorded, and truncates nothing: the sink equals the source row for row, with
  equal write times and the remaining TTLs, and the stale row is gone;
* the sink's consistency point and bootstrap time are that first snapshot time, and
  the copy's own rows are removed from the sink.
"""

from __future__ import annotations

import contextlib
import os
import random
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import psutil
import pytest
from replication_world import contents, create_sink_table, fresh_cluster, world_config

from cdcgen.adapters.checkpoints import CqlCheckpointStore
from cdcgen.adapters.cql import CqlClient, connect
from cdcgen.adapters.sink_state import CqlSinkState
from cdcgen.config import PipelineConfig
from cdcgen.core.cdc_log import TableRef
from cdcgen.core.errors import ReplicationError
from cdcgen.replication.cql_ports import cql_ports
from cdcgen.replication.replication_run import (
    Mode,
    Replication,
    ReplicationRequest,
    bootstrap_sink,
    replicate,
)

pytestmark = pytest.mark.integration

PREFIX = "t_rcopy_"
SOURCE = TableRef(f"{PREFIX}ks", "orders")
SINK = TableRef(f"{PREFIX}sink", "orders")
ROWS = 6_000
SPLITS = 512  # small ranges: the kill lands between recorded ones


@dataclass
class World:
    client: CqlClient
    config: PipelineConfig


def fill_source(client: CqlClient, rows: int, seed: int) -> None:
    """``rows`` rows, each written at its own time; a third with a TTL, half with tags."""
    from cassandra.concurrent import execute_concurrent_with_args

    rng = random.Random(seed)
    insert = client.session.prepare(
        f"INSERT INTO {SOURCE.qualified} (pk, ck, v, tags) VALUES (?, ?, ?, ?) "
        "USING TIMESTAMP ? AND TTL ?"
    )
    now_us = int(time.time() * 1_000_000)
    values = [
        (
            n // 4,
            n % 4,
            f"v{n}",
            {f"t{n % 7}", "x"} if n % 2 else None,
            now_us - rng.randrange(1, 3_600_000_000),
            86_400 if n % 3 == 0 else 0,
        )
        for n in range(rows)
    ]
    execute_concurrent_with_args(client.session, insert, values, concurrency=64)


@pytest.fixture(scope="module")
def world(contact_points: tuple[str, ...], tmp_path_factory: pytest.TempPathFactory
          ) -> Iterator[World]:  # fmt: skip
    lake = tmp_path_factory.mktemp("replication-copy-lake")
    client = connect(contact_points)
    keyspaces = [SOURCE.keyspace, SINK.keyspace, f"{PREFIX}state"]
    fresh_cluster(client, PREFIX, keyspaces, seed=71)  # the source's nodes and clocks
    config = world_config(PREFIX, contact_points, lake)
    create_sink_table(client, SOURCE)
    create_sink_table(client, SINK)
    fill_source(client, ROWS, seed=72)
    client.session.execute(f"INSERT INTO {SINK.qualified} (pk, ck, v) VALUES (-1, -1, 'stale')")
    store = CqlCheckpointStore(client, config.checkpoint_keyspace)
    store.ensure_schema()
    now = datetime.now(UTC)
    store.record_start(SOURCE, now - timedelta(hours=1))  # the lake covers the snapshot
    store.save_watermark(SOURCE, now)
    try:
        yield World(client, config)
    finally:
        client.close()


def start_bootstrap(world: World) -> subprocess.Popen[bytes]:
    """``cdcgen replication bootstrap --replace`` in a session of its own (its Spark JVM
    and Python workers in its process group)."""
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("CDCGEN_SINK_")},
        **world.config.to_env(),
        "CDCGEN_REPLICATION_COPY_SPLITS": str(SPLITS),
        "CDCGEN_REPLICATION_COPY_CONCURRENCY": "4",
    }
    command = [
        str(Path(sys.executable).parent / "cdcgen"), "replication", "bootstrap",
        "--table", SOURCE.qualified, "--sink-table", SINK.qualified, "--replace",
        "--run-id", "killed",
    ]  # fmt: skip
    return subprocess.Popen(
        command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True
    )


def kill_once_some_ranges_are_recorded(
    process: subprocess.Popen[bytes], state: CqlSinkState
) -> None:
    """SIGKILL the whole copy once a range is recorded: the CLI and its Spark JVM (its
    process group) and PySpark's Python workers, which put themselves in a group of
    their own; then wait until the sink's record of the copy no longer moves (writes
    already sent still land)."""
    deadline = time.monotonic() + 300
    while process.poll() is None and time.monotonic() < deadline:
        progress = state.copy_progress()
        if progress is not None and progress.done:
            break
        time.sleep(0.02)
    groups = {process.pid}
    with contextlib.suppress(psutil.Error):
        for child in psutil.Process(process.pid).children(recursive=True):
            with contextlib.suppress(psutil.Error, OSError):
                groups.add(os.getpgid(child.pid))
    for group in groups:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(group, signal.SIGKILL)
    _, err = process.communicate(timeout=60)
    assert process.returncode == -signal.SIGKILL, err.decode()[-3000:]
    seen, still = state.copy_progress(), 0
    while still < 10:  # 1 s without a change
        time.sleep(0.1)
        now = state.copy_progress()
        still = still + 1 if now == seen else 0
        seen = now


def test_a_sigkilled_spark_bootstrap_resumes_to_the_same_sink_state(world: World) -> None:
    job = Replication(SOURCE, SINK)
    ports = cql_ports(world.config, world.client, world.client)
    state = CqlSinkState(world.client, SOURCE, SINK)
    kill_once_some_ranges_are_recorded(start_bootstrap(world), state)
    killed = state.copy_progress()
    assert killed is not None and killed.done, "no range recorded before the kill"
    assert killed.truncate and killed.run_id == "killed"
    assert len(killed.done) < SPLITS, "every range was recorded: the kill came too late"
    assert state.progress().consistent_until is None  # no consistency point yet
    assert "stale" not in str(contents(world.client, SINK))  # truncated before the copy

    with pytest.raises(ReplicationError, match="unfinished"):  # never apply onto it
        replicate(world.config, ports, ReplicationRequest(job, "apply-too-soon"))

    record = bootstrap_sink(world.config, ports, ReplicationRequest(job, "resumed", Mode.BOOTSTRAP))
    source = contents(world.client, SOURCE)
    assert len(source) == ROWS
    assert record.status == "ok" and record.resumed_ranges == len(killed.done)
    assert record.copied_rows == ROWS
    assert record.copied_rows_now == ROWS - killed.rows  # only the ranges not recorded
    assert contents(world.client, SINK) == source  # so nothing was truncated again
    assert record.consistent_until == killed.snapshot_at.isoformat()
    progress = state.progress()
    assert progress.consistent_until == progress.bootstrapped_at == killed.snapshot_at
    assert state.copy_progress() is None  # the copy's rows are removed
    assert_ttls_kept(world.client)


def assert_ttls_kept(client: CqlClient) -> None:
    """A copied cell keeps its remaining TTL: as read, counted again from when it was
    written (TTLs are whole seconds, and a page is written a moment after it is read)."""

    def ttls(table: TableRef) -> dict[Any, Any]:
        rows = client.session.execute(f"SELECT pk, ck, TTL(v) FROM {table.qualified}", timeout=60)
        return {(r[0], r[1]): r[2] for r in rows}

    source, sink = ttls(SOURCE), ttls(SINK)
    with_ttl = [key for key, ttl in source.items() if ttl]
    assert len(with_ttl) >= ROWS // 4
    assert all(sink[key] is not None and abs(sink[key] - source[key]) <= 5 for key in with_ttl)
    assert all(sink[key] is None for key, ttl in source.items() if not ttl)
