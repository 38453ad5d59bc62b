"""Sample records: a realistic site with no cluster, for previews, tests and screenshots.

The generation is built by the real core (``make_generation`` over three nodes
with random vnode tokens), so the ring picture and the distributions look like
a real cluster's; the expectations and changes numbers are invented.
"""

from __future__ import annotations

import random
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

from cdcgen.core.replication_record import RejectedEntry, ReplicationRecord, ReplicationRunStatus
from cdcgen.core.topology import Node, make_generation
from cdcgen.reports.adapters import owners_from_nodes, ring_from_description
from cdcgen.reports.records import (
    ChangesReport,
    ExpectationOutcome,
    GenerationReport,
    GenerationRows,
    RunRecord,
    RunStatus,
    TableLag,
)
from cdcgen.reports.replication_records import save_record as save_replication_record
from cdcgen.reports.site import build_site, save_record

_EXPECTATIONS = (
    ("range ends strictly increasing", None),
    ("every entry has at least one stream", "streams"),
    ("stream ids are 16 bytes, version 1", "stream_id"),
    ("stream index bits equal the entry index", "stream_id"),
    ("stream ids unique in the generation", "stream_id"),
    ("vnode colocation: stream token in its range", "stream_token"),
    ("shard colocation: stream token on its shard", "stream_token"),
    ("optimal: one entry per ring token", None),
)


def sample_nodes(rng: random.Random, nodes: int = 3, vnodes: int = 16) -> list[Node]:
    names = [f"scylla-{i + 1}" for i in range(nodes)]
    shards = [1 + i % 3 for i in range(nodes)]  # 1, 2, 3 shards: visible in the picture
    used: set[int] = set()
    result = []
    for name, shard_count in zip(names, shards, strict=True):
        tokens: list[int] = []
        while len(tokens) < vnodes:
            token = rng.randint(-(1 << 63) + 1, (1 << 63) - 1)
            if token not in used:
                used.add(token)
                tokens.append(token)
        result.append(Node(name, shard_count, 12, tuple(sorted(tokens))))
    return result


def sample_generation(
    generation_time: datetime, seed: int = 7, *, failing: int = 0, vnodes: int = 16
) -> GenerationReport:
    """A generation over three sample nodes; ``failing`` expectations fail."""
    rng = random.Random(seed)
    nodes = sample_nodes(rng, vnodes=vnodes)
    description = make_generation(nodes, rng)
    owners = owners_from_nodes((n.name, n.tokens) for n in nodes)
    outcomes = tuple(
        ExpectationOutcome(
            name=name,
            passed=i >= failing,
            details="observed 0 offending rows" if i >= failing else "observed 2 offending rows",
            column=column,
        )
        for i, (name, column) in enumerate(_EXPECTATIONS)
    )
    return GenerationReport(
        generation_id=str(uuid.UUID(int=rng.getrandbits(128), version=1)),
        generation_time=generation_time,
        status=RunStatus.FAILED if failing else RunStatus.SUCCESS,
        expectations=outcomes,
        ring=ring_from_description(description, owners),
        created_at=generation_time + timedelta(seconds=75),
        dag_id="cdc_generations",
        run_id=f"manual__{generation_time.isoformat()}",
        published=not failing,
        source="sample (3 nodes, vnodes)",
    )


def sample_changes(at: datetime, generations: list[datetime], seed: int = 11) -> ChangesReport:
    rng = random.Random(seed)
    tables = ("shop.orders", "shop.customers")
    rows = tuple(
        GenerationRows(g, f"gen-{i}", table, rng.randint(500, 5000))
        for i, g in enumerate(generations)
        for table in tables
    )
    lags = tuple(
        TableLag(
            keyspace=t.split(".")[0],
            table=t.split(".")[1],
            watermark=at - timedelta(seconds=30 + 20 * i),
            lag_seconds=30.0 + 20 * i,
            rows=sum(r.rows for r in rows if r.table == t),
        )
        for i, t in enumerate(tables)
    )
    return ChangesReport(
        status=RunStatus.SUCCESS,
        window_start=at - timedelta(minutes=5),
        window_end=at - timedelta(seconds=30),
        tables=lags,
        rows_per_generation=rows,
        expectations=(ExpectationOutcome("cdc$time inside the window", True),),
        created_at=at,
        dag_id="cdc_changes",
        run_id=f"scheduled__{at.isoformat()}",
    )


def sample_records(now: datetime | None = None) -> list[RunRecord]:
    now = now or datetime(2026, 11, 1, 12, 0, tzinfo=UTC)
    times = [now - timedelta(hours=3 - i) for i in range(3)]
    records: list[RunRecord] = [
        sample_generation(t, seed=i, failing=1 if i == 1 else 0) for i, t in enumerate(times)
    ]
    records += [
        sample_changes(t + timedelta(minutes=30), times[: i + 1]) for i, t in enumerate(times)
    ]
    return records


def sample_replication(
    source: str, sink: str, bootstrapped_at: datetime, applies: int, seed: int = 5
) -> list[ReplicationRecord]:
    """A bootstrap of ``sink`` then ``applies`` runs 30 minutes apart, as the replication
    run records them; the second apply has one change the sink refused."""
    rng = random.Random(seed)
    ended = bootstrapped_at + timedelta(minutes=2)
    at = bootstrapped_at.isoformat()
    records = [
        ReplicationRecord(
            source_table=source,
            sink_table=sink,
            bootstrapped_at=at,
            kind="bootstrap",
            run_id=f"bootstrap__{at}",
            started_at=at,
            ended_at=ended.isoformat(),
            consistent_from=None,
            consistent_until=at,
            lag_seconds=(ended - bootstrapped_at).total_seconds(),
            applied_log_rows=0,
            applied_batches=0,
            rejected=(),
            status=ReplicationRunStatus.OK,
            copied_rows=rng.randint(10_000, 90_000),
            truncated=False,
        )
    ]
    until = bootstrapped_at
    for i in range(applies):
        run_end = ended + timedelta(minutes=30 * (i + 1))
        since, until = until, run_end - timedelta(seconds=rng.randint(40, 200))
        log_rows = rng.randint(200, 4000)
        rejected = () if i != 1 else (_sample_rejected(sink, since, rng),)
        records.append(
            ReplicationRecord(
                source_table=source,
                sink_table=sink,
                bootstrapped_at=at,
                kind="apply",
                run_id=f"scheduled__{run_end.isoformat()}",
                started_at=(run_end - timedelta(seconds=20)).isoformat(),
                ended_at=run_end.isoformat(),
                consistent_from=since.isoformat(),
                applied_from=since.isoformat(),
                consistent_until=until.isoformat(),
                lag_seconds=(run_end - until).total_seconds(),
                lake_version=3 + i,
                applied_log_rows=log_rows,
                applied_batches=log_rows // 3,
                rejected=rejected,
                status=ReplicationRunStatus.REJECTED if rejected else ReplicationRunStatus.OK,
            )
        )
    return records


def _sample_rejected(sink: str, after: datetime, rng: random.Random) -> RejectedEntry:
    write_time = after + timedelta(seconds=rng.randint(1, 600))
    return RejectedEntry(
        write_time=write_time.isoformat(),
        cdc_time=str(uuid.UUID(int=rng.getrandbits(128), version=1)),
        stream_id=f"{rng.getrandbits(128):032x}",
        reason=f"{sink}.items: removed list elements are logged by cell key, which CQL "
        "cannot address",
    )


def sample_replication_records(now: datetime | None = None) -> list[ReplicationRecord]:
    now = now or datetime(2026, 11, 1, 12, 0, tzinfo=UTC)
    return [
        *sample_replication("shop.orders", "replica.orders", now - timedelta(hours=3), 5),
        *sample_replication("shop.customers", "replica.customers", now - timedelta(hours=2), 3, 6),
    ]


def write_sample_site(report_dir: Path) -> Path:
    for record in sample_records():
        save_record(report_dir, record)
    for replication in sample_replication_records():
        save_replication_record(report_dir, replication)
    return build_site(report_dir).index
