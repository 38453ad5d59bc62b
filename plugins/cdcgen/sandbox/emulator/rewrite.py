"""The 4.3 -> 4.4 rewrite: copy V1 stream descriptions to the V2 tables, then mark it done.

The procedure every upgraded ScyllaDB node runs on restart (seed document, "Streams
description table V1 and rewriting"):

1. no ``system_distributed.cdc_streams_descriptions`` table: nothing to do;
2. ``system.cdc_local`` has ``key = 'rewritten'``: already done;
3. no CDC-enabled table: write the marker and stop;
4. read every V1 generation timestamp;
5. skip those "too old": a timestamp is too old if some later generation timestamp ``T``
   has ``now - ttl > T`` for every CDC table (no row of the old generation can be left);
6. for each remaining one not yet in ``cdc_generation_timestamps``: copy its streams,
   range by range, to ``cdc_streams_descriptions_v2``, then its timestamp;
7. write ``key = 'rewritten'``.

Readers switch from V1 to V2 on the marker
(:func:`cdcgen.adapters.generation_sources.detect_legacy_mode`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta

from cdcgen.sandbox.emulator.cdc_time import utc_from_driver
from cdcgen.sandbox.emulator.cluster import SandboxCluster, utc_now
from cdcgen.sandbox.emulator.cql_util import execute, execute_many
from cdcgen.sandbox.emulator.schema_setup import table_exists
from cdcgen.sandbox.emulator.state import load_cdc_tables
from cdcgen.schema import (
    CDC_LOCAL_REWRITTEN_KEY,
    GENERATION_TIMESTAMPS_KEY,
    Table,
)


@dataclass
class RewriteReport:
    """What the rewrite did; ``status`` says why it stopped where it did."""

    status: str
    rewritten: list[datetime] = field(default_factory=list)
    too_old: list[datetime] = field(default_factory=list)
    already_present: list[datetime] = field(default_factory=list)


def too_old(timestamps: list[datetime], ttls: list[int], now: datetime) -> set[datetime]:
    """Step 5: generations no CDC table can still hold rows of (a TTL of 0 never expires)."""
    if not ttls or any(ttl <= 0 for ttl in ttls):
        return set()
    horizon = now - timedelta(seconds=max(ttls))
    ordered = sorted(timestamps)
    old = set()
    for i, stamp in enumerate(ordered):
        if any(later < horizon for later in ordered[i + 1 :]):
            old.add(stamp)
    return old


def rewrite_v1(
    cluster: SandboxCluster, *, now: datetime | None = None, marker_only: bool = False
) -> RewriteReport:
    """Run the rewrite procedure (``marker_only``: skip copying, as a freshly bootstrapped
    node does, which only writes the marker)."""
    client, schema = cluster.client, cluster.schema
    streams_v1 = schema.name(Table.CDC_STREAMS_DESCRIPTIONS_V1)
    keyspace, table = streams_v1.split(".", 1)
    if not table_exists(client, keyspace, table):
        return RewriteReport("no V1 streams table: nothing to rewrite")
    cluster.setup(legacy_v1=True)
    cdc_local = schema.name(Table.CDC_LOCAL)
    marker = list(
        execute(client, f"SELECT key FROM {cdc_local} WHERE key = ?", (CDC_LOCAL_REWRITTEN_KEY,))
    )
    if marker:
        return RewriteReport("already rewritten")
    report = RewriteReport("rewritten")
    tables = load_cdc_tables(client, schema)
    if marker_only or not tables:
        report.status = "marker only" if marker_only else "no CDC table: marker only"
    else:
        stamps = [
            utc_from_driver(r.time) for r in execute(client, f"SELECT time FROM {streams_v1}")
        ]
        clock = utc_now() if now is None else now
        old = too_old(stamps, [t.cdc_ttl for t in tables], clock)
        for stamp in sorted(stamps):
            if stamp in old:
                report.too_old.append(stamp)
            elif _published(cluster, stamp):
                report.already_present.append(stamp)
            else:
                _copy_generation(cluster, stamp)
                report.rewritten.append(stamp)
    execute(client, f"INSERT INTO {cdc_local} (key) VALUES (?)", (CDC_LOCAL_REWRITTEN_KEY,))
    return report


def _published(cluster: SandboxCluster, stamp: datetime) -> bool:
    rows = execute(
        cluster.client,
        f"SELECT time FROM {cluster.schema.name(Table.CDC_GENERATION_TIMESTAMPS)} "
        "WHERE key = ? AND time = ?",
        (GENERATION_TIMESTAMPS_KEY, stamp),
    )
    return bool(list(rows))


def _copy_generation(cluster: SandboxCluster, stamp: datetime) -> None:
    """Streams first, timestamp last: a reader never sees a timestamp with partial streams."""
    client, schema = cluster.client, cluster.schema
    rows = list(
        execute(
            client,
            f"SELECT description FROM {schema.name(Table.CDC_GENERATION_DESCRIPTIONS_V1)} "
            "WHERE time = ?",
            (stamp,),
        )
    )
    if not rows or rows[0].description is None:
        return
    execute_many(
        client,
        f"INSERT INTO {schema.name(Table.CDC_STREAMS_DESCRIPTIONS_V2)} (time, range_end, streams) "
        "VALUES (?, ?, ?)",
        ((stamp, range_end, set(streams)) for range_end, streams, _ in rows[0].description),
    )
    execute(
        client,
        f"INSERT INTO {schema.name(Table.CDC_GENERATION_TIMESTAMPS)} (key, time) VALUES (?, ?)",
        (GENERATION_TIMESTAMPS_KEY, stamp),
    )
