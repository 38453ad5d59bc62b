"""A CDC workload: base writes plus the log rows ScyllaDB would write with them.

Each write picks an operation (insert, update, row delete, partition delete, range
delete; :mod:`cdcgen_dev.emulator.writes` makes them), a key and a coordinator (a
simulated node that is up, round robin). Its timestamp is the coordinator's clock (what
ScyllaDB does when the client sends none) or, with ``timestamps="client"``, the client's
clock plus ``client_skew``. The coordinator then applies ScyllaDB's rules
(:mod:`cdcgen_dev.emulator.routing`): a write from the future, the past, before the
first generation or into a generation its nodes could not load is refused (neither base
nor log row is written, as ScyllaDB fails the whole write); an accepted write goes to the
stream of the generation operating at its timestamp, so writes in the leeway window
around a switch land exactly where ScyllaDB would put them.

The generation timeline is re-read every ``refresh_interval`` (nodes learning about new
generations). Each write is one unlogged batch of prepared statements (its base rows and
its log rows, applied together like ScyllaDB's base and log mutations), sent with
``execute_concurrent``; the rate is held by sending what is due every few milliseconds.
"""

from __future__ import annotations

import itertools
import random
import time
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any
from uuid import UUID

from cdcgen.core.cdc_log import timeuuid_from_micros
from cdcgen.core.errors import WriteRejected
from cdcgen.core.stream_id import StreamId
from cdcgen.core.time import from_micros, to_micros
from cdcgen_dev.emulator.cluster import SandboxCluster, utc_now
from cdcgen_dev.emulator.cql_util import prepared
from cdcgen_dev.emulator.log_rows import (
    RANGE_DELETE,
    WRITE_OPERATIONS,
    BaseWrite,
    Operation,
    base_statements,
    log_insert_cql,
    log_insert_params,
    log_row_values,
    operation_label,
)
from cdcgen_dev.emulator.partition import partition_token
from cdcgen_dev.emulator.routing import TabletRouter, VnodeRouter, WriteRouter
from cdcgen_dev.emulator.state import EmulatorError, SimNode, load_cdc_table
from cdcgen_dev.emulator.tables import spec_from_json
from cdcgen_dev.emulator.tablets import tablet_stream_sets
from cdcgen_dev.emulator.writes import WriteFactory

#: Operation weights; range deletes are keyed :data:`RANGE_DELETE` (spelled
#: ``Operation.RANGE_DELETE_START_INCLUSIVE``) and apply to tables with clustering columns.
DEFAULT_MIX: dict[Operation, float] = {
    Operation.INSERT: 0.52,
    Operation.UPDATE: 0.30,
    Operation.ROW_DELETE: 0.12,
    Operation.PARTITION_DELETE: 0.03,
    RANGE_DELETE: 0.03,
}
TICK_SECONDS = 0.01
MAX_BURST_SECONDS = 0.25


@dataclass(frozen=True)
class WorkloadSpec:
    """What to write: table, rate, duration, keys, timestamps, faults."""

    keyspace: str
    table: str = "orders"
    rate: float = 200.0  # writes per second
    duration: timedelta = timedelta(seconds=5)
    keys: int = 1000  # partition keys 0..keys-1
    hot_keys: bool = False  # 80% of writes on the first 20% of the keys
    max_rows_per_write: int = 3  # clustering rows per insert/update/row delete
    mix: dict[Operation, float] = field(default_factory=lambda: dict(DEFAULT_MIX))
    timestamps: str = "coordinator"  # or "client"
    client_skew: timedelta = timedelta(0)
    coordinator: str | None = None  # one node's name; default: round robin over up nodes
    base_ttl: int | None = None
    misroute_fraction: float = 0.0  # fault: log rows put into a wrong stream
    seed: int | None = None
    concurrency: int = 64
    refresh_interval: timedelta = timedelta(milliseconds=500)
    keep_writes: bool = False  # keep each accepted write in the report (tests)

    def __post_init__(self) -> None:
        if self.rate <= 0 or self.keys < 1 or self.max_rows_per_write < 1:
            raise EmulatorError("rate, keys and rows per write must be positive")
        if self.timestamps not in ("coordinator", "client"):
            raise EmulatorError(
                f"timestamps={self.timestamps!r}: expected 'coordinator' or 'client'"
            )
        if not 0.0 <= self.misroute_fraction <= 1.0:
            raise EmulatorError("misroute_fraction must be between 0 and 1")
        if not self.mix or any(w < 0 for w in self.mix.values()) or sum(self.mix.values()) <= 0:
            raise EmulatorError("the operation mix needs positive weights")
        unknown = sorted(op.name for op in self.mix if op not in WRITE_OPERATIONS)
        if unknown:
            raise EmulatorError(
                f"the operation mix cannot have {unknown} (range deletes: RANGE_DELETE)"
            )


@dataclass(frozen=True)
class KeptWrite:
    """An accepted write and where its log rows went: what a test compares a log with."""

    write: BaseWrite
    stream: bytes
    time: UUID


@dataclass
class WorkloadReport:
    """What was written (and refused), to compare with what a consumer reads back."""

    writes: int = 0
    log_rows: int = 0
    base_statements: int = 0
    rejected: Counter[str] = field(default_factory=Counter)
    failed: int = 0  # accepted writes the cluster failed to apply (driver errors)
    misrouted: int = 0  # log rows deliberately put into a wrong stream (fault)
    operations: Counter[str] = field(default_factory=Counter)
    log_rows_by_generation: Counter[datetime] = field(default_factory=Counter)
    first_write: datetime | None = None
    last_write: datetime | None = None
    elapsed_seconds: float = 0.0
    kept: list[KeptWrite] = field(default_factory=list)  # with ``keep_writes`` only

    def to_json(self) -> dict[str, Any]:
        return {
            "writes": self.writes,
            "log_rows": self.log_rows,
            "base_statements": self.base_statements,
            "rejected": dict(self.rejected),
            "failed": self.failed,
            "misrouted": self.misrouted,
            "operations": dict(self.operations),
            "log_rows_by_generation": {
                k.isoformat(timespec="milliseconds"): v
                for k, v in sorted(self.log_rows_by_generation.items())
            },
            "first_write": self.first_write.isoformat() if self.first_write else None,
            "last_write": self.last_write.isoformat() if self.last_write else None,
            "elapsed_seconds": round(self.elapsed_seconds, 3),
        }


def make_router(cluster: SandboxCluster, keyspace: str, table: str) -> WriteRouter:
    """The coordinators' current knowledge for this table (vnode generations or tablets)."""
    record = load_cdc_table(cluster.client, cluster.schema, keyspace, table)
    if record.uses_tablets:
        return TabletRouter(tablet_stream_sets(cluster, keyspace, table), cluster.leeway)
    return VnodeRouter(cluster.timeline(), cluster.leeway)


def run_workload(cluster: SandboxCluster, workload: WorkloadSpec) -> WorkloadReport:
    """Write for ``duration`` at ``rate`` writes/s; returns what was written and refused."""
    from cassandra.concurrent import execute_concurrent

    writer = _Writer(cluster, workload)
    report = WorkloadReport()
    start = time.monotonic()
    end = start + workload.duration.total_seconds()
    refreshed = start
    sent = 0
    while (now_mono := time.monotonic()) < end:
        if now_mono - refreshed >= workload.refresh_interval.total_seconds():
            writer.refresh()
            refreshed = now_mono
        due = int((now_mono - start) * workload.rate) + 1 - sent
        due = min(due, max(1, int(workload.rate * MAX_BURST_SECONDS)))
        if due <= 0:
            time.sleep(TICK_SECONDS)
            continue
        writes: list[tuple[Any, Any]] = []
        for _ in range(due):
            write = writer.plan(report)
            if write is not None:
                writes.append((write, None))
        sent += due
        if writes:
            results = execute_concurrent(
                cluster.client.session,
                writes,
                concurrency=workload.concurrency,
                raise_on_first_error=False,
            )
            report.failed += sum(1 for ok, _ in results if not ok)
    report.elapsed_seconds = time.monotonic() - start
    return report


class _Writer:
    """Turns random writes into unlogged batches (base + log rows), routed as their
    coordinator would route them."""

    def __init__(self, cluster: SandboxCluster, workload: WorkloadSpec) -> None:
        from cassandra.query import UNSET_VALUE, BatchStatement, BatchType

        self.batch_type = BatchStatement
        self.unlogged = BatchType.UNLOGGED
        self.consistency = cluster.client.metadata_consistency
        self.cluster = cluster
        self.workload = workload
        self.unset = UNSET_VALUE
        self.record = load_cdc_table(
            cluster.client, cluster.schema, workload.keyspace, workload.table
        )
        self.spec = spec_from_json(self.record.spec_json)
        self.rng = random.Random(workload.seed)
        self.factory = WriteFactory(
            self.spec, self.rng, workload.mix, keys=workload.keys, hot_keys=workload.hot_keys,
            max_rows_per_write=workload.max_rows_per_write, base_ttl=workload.base_ttl,
        )  # fmt: skip
        log_cql, self.log_names = log_insert_cql(self.spec)
        self.log_statement = prepared(cluster.client, log_cql)
        self.pk_types = [c.cql_type for c in self.spec.partition_key]
        self.refresh()

    def refresh(self) -> None:
        """Re-read generations and live nodes, as nodes keep learning about them."""
        self.router = make_router(self.cluster, self.workload.keyspace, self.workload.table)
        self.coordinators = itertools.cycle(_coordinators(self.cluster, self.workload.coordinator))

    def plan(self, report: WorkloadReport) -> Any:
        """One write as an unlogged batch of its base and log statements (applied together,
        as ScyllaDB applies a base mutation with its log mutation), or None if its
        coordinator refuses it; updates ``report``.
        """
        node = next(self.coordinators)
        wall = utc_now()
        clock = self.cluster.clock(node, wall)
        client_clock = wall + self.workload.client_skew
        stamp = clock if self.workload.timestamps == "coordinator" else client_clock
        write = self.factory.make(to_micros(stamp))
        write_ts = from_micros(write.timestamp_us)
        try:
            generation, stream = self.router.route(
                write_ts, partition_token(self.pk_types, write.partition), clock
            )
        except WriteRejected as exc:
            report.rejected[type(exc).__name__] += 1
            return None
        rows = log_row_values(self.spec, write)
        fraction = self.workload.misroute_fraction
        if fraction and self.rng.random() < fraction:
            stream = _wrong_stream(self.router, generation, stream, self.rng)
            report.misrouted += len(rows)
        batch = self.batch_type(batch_type=self.unlogged, consistency_level=self.consistency)
        base = base_statements(self.spec, write)
        for cql, params in base:
            batch.add(prepared(self.cluster.client, cql), params)
        report.base_statements += len(base)
        time_uuid = timeuuid_from_micros(write.timestamp_us, self.rng)
        for row in rows:
            params = log_insert_params(
                self.log_names, row, stream.raw, time_uuid, write.timestamp_us,
                self.record.cdc_ttl, self.unset,
            )  # fmt: skip
            batch.add(self.log_statement, params)
        if self.workload.keep_writes:
            report.kept.append(KeptWrite(write, stream.raw, time_uuid))
        report.writes += 1
        report.log_rows += len(rows)
        report.log_rows_by_generation[generation] += len(rows)
        report.operations[operation_label(write.operation)] += 1
        report.first_write = min(filter(None, [report.first_write, write_ts]))
        report.last_write = max(filter(None, [report.last_write, write_ts]))
        return batch


def _coordinators(cluster: SandboxCluster, name: str | None) -> list[SimNode]:
    if name is not None:
        node = cluster.node(name)
        if not node.up:
            raise EmulatorError(f"coordinator {name} is down")
        return [node]
    nodes = cluster.up_nodes()
    if not nodes:
        raise EmulatorError("no sandbox node is up: join one first (cdcgen sandbox join-node)")
    return nodes


def _wrong_stream(
    router: WriteRouter, generation: datetime, correct: StreamId, rng: random.Random
) -> StreamId:
    """Fault: another stream of the same generation (or a corrupted copy if it has one)."""
    others = [s for s in router.streams(generation) if s != correct]
    if others:
        return rng.choice(others)
    flipped = bytearray(correct.raw)
    flipped[7] ^= 0x01  # a different token: still a valid ID, in the wrong place
    return StreamId(bytes(flipped))
