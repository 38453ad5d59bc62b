"""The 4.3 -> 4.4 rewrite: copy the V1 generations that may still hold data to the V2
tables, then mark the source ``rewritten``. ScyllaDB's own procedure, step by step.

``generation_service::maybe_rewrite_streams_descriptions`` and
``rewrite_streams_descriptions`` (``cdc/generation.cc``):

1. no V1 streams table (``cdc_streams_descriptions``) in the source: nothing to do;
2. the source's ``cdc_local`` has ``key = 'rewritten'``: already done;
3. no CDC-enabled table: write the marker (without a timestamp) and stop;
4. read every V1 generation timestamp and choose, with each table's creation time and
   TTL, the ones that may still hold data (:func:`cdcgen.core.retention.generations_to_rewrite`);
5. for each chosen one: skip it if its timestamp row is already published; read its
   description from ``cdc_generation_descriptions``; a generation without one is given
   up on (logged, reported) and the others go on; otherwise publish its streams, then its
   timestamp (:class:`~cdcgen.adapters.publisher.CqlDescriptionPublisher`);
6. write ``key = 'rewritten'`` with the newest V1 timestamp, whatever step 5 gave up on.

Readers switch from V1 to V2 on the marker
(:func:`cdcgen.adapters.v1_sources.detect_legacy_mode`). The same procedure
serves the maintenance DAG (publishing into the target keyspace) and a sandbox that
plays a ScyllaDB node (publishing into its own copy of ``system_distributed``).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING

from cdcgen.core.cdc_log import CdcTable
from cdcgen.core.retention import generations_to_rewrite
from cdcgen.core.time import naive_as_utc
from cdcgen.schema import CDC_LOCAL_REWRITTEN_KEY, SourceSchema, Table

if TYPE_CHECKING:
    from cdcgen.adapters.cql import CqlClient
    from cdcgen.adapters.publisher import CqlDescriptionPublisher

log = logging.getLogger(__name__)


@dataclass
class RewriteReport:
    """What the rewrite did and why it stopped where it did."""

    status: str
    rewritten: list[datetime] = field(default_factory=list)
    too_old: list[datetime] = field(default_factory=list)
    already_present: list[datetime] = field(default_factory=list)
    missing_description: list[datetime] = field(default_factory=list)
    marker_written: bool = False


def is_rewritten(client: CqlClient, schema: SourceSchema) -> bool:
    rows = client.execute(
        f"SELECT key FROM {schema.name(Table.CDC_LOCAL)} WHERE key = %s",
        (CDC_LOCAL_REWRITTEN_KEY,),
    )
    return bool(list(rows))


def write_marker(client: CqlClient, schema: SourceSchema, last: datetime | None) -> None:
    """``cdc_set_rewritten``: the marker, with the newest rewritten timestamp if any."""
    cdc_local = schema.name(Table.CDC_LOCAL)
    if last is None:
        client.execute(f"INSERT INTO {cdc_local} (key) VALUES (%s)", (CDC_LOCAL_REWRITTEN_KEY,))
    else:
        client.execute(
            f"INSERT INTO {cdc_local} (key, streams_timestamp) VALUES (%s, %s)",
            (CDC_LOCAL_REWRITTEN_KEY, last),
        )


def rewrite_v1(
    client: CqlClient,
    schema: SourceSchema,
    publisher: CqlDescriptionPublisher,
    tables: Sequence[CdcTable],
    now: datetime,
) -> RewriteReport:
    """Run the procedure of the module doc against the source ``schema``, publishing with
    ``publisher``; ``tables`` are the cluster's CDC tables, ``now`` the clock it runs at."""
    if not client.table_exists(schema.name(Table.CDC_STREAMS_DESCRIPTIONS_V1)):
        return RewriteReport("no V1 streams table: nothing to rewrite")
    if is_rewritten(client, schema):
        return RewriteReport("already rewritten")
    if not tables:
        write_marker(client, schema, None)
        return RewriteReport("no CDC table: marker only", marker_written=True)
    streams_v1 = schema.name(Table.CDC_STREAMS_DESCRIPTIONS_V1)
    stamps = sorted(naive_as_utc(r.time) for r in client.execute(f"SELECT time FROM {streams_v1}"))
    keep = generations_to_rewrite(stamps, tables, now)
    chosen = set(keep)
    report = RewriteReport("rewritten", too_old=[s for s in stamps if s not in chosen])
    published = publisher.published_timestamps()
    descriptions = schema.name(Table.CDC_GENERATION_DESCRIPTIONS_V1)
    for stamp in keep:
        if stamp in published:
            report.already_present.append(stamp)
            continue
        rows = list(
            client.execute(f"SELECT description FROM {descriptions} WHERE time = %s", (stamp,))
        )
        if not rows or rows[0].description is None:
            log.error("V1 generation %s has no description: not rewritten", stamp.isoformat())
            report.missing_description.append(stamp)
            continue
        publisher.publish_rows(
            stamp, [(end, list(streams)) for end, streams, _ in rows[0].description]
        )
        report.rewritten.append(stamp)
    write_marker(client, schema, keep[-1] if keep else None)
    report.marker_written = True
    return report
