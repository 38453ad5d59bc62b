"""Active-active: two keyspaces replicating to each other converge, and nothing loops back.

Two CDC tables of one emulated cluster (``a.orders`` and ``b.orders``) take conflicting
writes on the same keys at the same time. Each direction applies its source's changes
from the lake to the other table; the sandbox's CDC emulation logs what was applied in
the receiving table's own log, as ScyllaDB logs every write
(:mod:`cdcgen_dev.emulator.capture`). Then:

* after A to B, B's extraction holds B's own changes plus the copies of A's; B to A
  applies B's own and skips exactly the copies (their originals are in A's lake), so no
  write goes back where it came from;
* both tables end equal, row for row and with equal write times (last writer wins
  settled every conflict the same way on both sides);
* a second round, with nothing new written, applies nothing in either direction.

One generation throughout: ScyllaDB refuses a write stamped before the generation
switch its coordinator already operates in (``cdc/metadata.cc``, "from the past"), so a
vnode CDC sink cannot take replayed writes from before its last switch; that is a
documented limit of replicating into a CDC-enabled vnode table.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from replication_world import (
    CLOSE_SECONDS,
    COPY,
    contents,
    extract,
    fresh_cluster,
    workload,
    world_config,
)

from cdcgen.adapters.cql import CqlClient, connect
from cdcgen.changes.layout import read_delta, table_root
from cdcgen.config import PipelineConfig
from cdcgen.core.cdc_log import TableRef
from cdcgen.core.replication_record import ReplicationRecord
from cdcgen.replication.cql_ports import cql_ports
from cdcgen.replication.replication_run import (
    Mode,
    Replication,
    ReplicationRequest,
    bootstrap_sink,
    replicate,
)
from cdcgen.spark_runtime.session import JobKind, job_session
from cdcgen_dev.emulator import SandboxCluster, create_cdc_table, orders_table
from cdcgen_dev.emulator.capture import capture_into

pytestmark = pytest.mark.integration

PREFIX = "t_aa_"
A, B = TableRef(f"{PREFIX}a", "orders"), TableRef(f"{PREFIX}b", "orders")


@dataclass
class Pair:
    client: CqlClient
    cluster: SandboxCluster
    config: PipelineConfig
    spark: Any
    contact_points: tuple[str, ...]
    marks: list[datetime]

    def extract(self, table: TableRef, start: datetime, end: datetime) -> int:
        return extract(self.spark, self.config, table, start, end)

    def apply(self, source: TableRef, sink: TableRef) -> ReplicationRecord:
        capture = capture_into(self.cluster, sink.keyspace, sink.table)
        job = Replication(source, sink)
        run_id = f"{source.keyspace}-to-{sink.keyspace}"
        ports = cql_ports(self.config, self.client, self.client, on_applied=capture)
        return replicate(self.config, ports, ReplicationRequest(job, run_id))

    def lake_rows(self, table: TableRef) -> int:
        return read_delta(table_root(self.config.lake_path, table), columns=[]).num_rows


@pytest.fixture(scope="module")
def pair(contact_points: tuple[str, ...], tmp_path_factory: pytest.TempPathFactory
         ) -> Iterator[Pair]:  # fmt: skip
    lake: Path = tmp_path_factory.mktemp("active-active-lake")
    client = connect(contact_points)
    keyspaces = [A.keyspace, B.keyspace, f"{PREFIX}state"]
    cluster = fresh_cluster(client, PREFIX, keyspaces, seed=51)
    config = world_config(PREFIX, contact_points, lake)
    for table in (A, B):
        create_cdc_table(cluster, orders_table(table.keyspace, table.table))
    spark = job_session(JobKind.CHANGES_EXTRACT, "cdcgen-active-active-tests")
    start = datetime.now(UTC)
    time.sleep(CLOSE_SECONDS + 1.0)  # the generation operates; the first (empty) windows close
    world = Pair(client, cluster, config, spark, contact_points, [start])
    ready = datetime.now(UTC)
    for table in (A, B):
        world.extract(table, start, ready)  # where each lake starts
    for source, sink in ((A, B), (B, A)):  # both empty: bootstraps that copy nothing
        job = Replication(source, sink)
        setup = ReplicationRequest(job, "setup", Mode.BOOTSTRAP)
        record = bootstrap_sink(config, cql_ports(config, client, client, COPY), setup)
        assert record.copied_rows == 0
    world.marks.append(ready)
    try:
        yield world
    finally:
        client.close()


def write_on_both_sides(pair: Pair) -> None:
    """Conflicting writes: the same 20 keys on both tables, at the same time."""
    threads = [
        threading.Thread(
            target=workload, args=(pair.cluster, table, 3.0, seed), kwargs={"keys": 20}
        )
        for table, seed in ((A, 61), (B, 62))
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


def test_both_sides_converge_and_nothing_loops_back(pair: Pair) -> None:
    write_on_both_sides(pair)
    assert contents(pair.client, A) != contents(pair.client, B)  # they conflict
    end = datetime.now(UTC) + timedelta(milliseconds=5)
    time.sleep(CLOSE_SECONDS)
    start = pair.marks[-1]
    pair.extract(A, start, end)
    a_to_b = pair.apply(A, B)  # logged in B's own log by the emulated CDC
    assert a_to_b.applied_log_rows == pair.lake_rows(A) > 0
    assert a_to_b.peer_log_rows_skipped == 0
    pair.extract(B, start, end)  # B's own changes, and the copies of A's
    b_own = pair.lake_rows(B) - a_to_b.applied_log_rows
    assert b_own > 0
    b_to_a = pair.apply(B, A)
    assert b_to_a.peer_log_rows_skipped == a_to_b.applied_log_rows  # no loop
    assert b_to_a.applied_log_rows == b_own
    source_a, source_b = contents(pair.client, A), contents(pair.client, B)
    assert source_a == source_b and source_a


def test_a_second_round_applies_nothing(pair: Pair) -> None:
    time.sleep(CLOSE_SECONDS)
    end = datetime.now(UTC)
    for table in (A, B):
        pair.extract(table, pair.marks[-1], end)
    for source, sink in ((A, B), (B, A)):
        record = pair.apply(source, sink)
        assert record.applied_log_rows == 0, record
    assert contents(pair.client, A) == contents(pair.client, B)
