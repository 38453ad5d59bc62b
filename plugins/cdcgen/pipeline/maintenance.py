"""Maintenance: the V1 -> V2 rewrite, expiring superseded generations, vacuuming the lake.

Both need every CDC table's TTL and creation time (:class:`~cdcgen.adapters.cdc_tables.CdcCatalog`):
a generation may be skipped (rewrite) or marked ``expired`` only once no CDC table can
still hold rows written to it. :mod:`cdcgen.adapters.v1_rewrite` and
:mod:`cdcgen.adapters.expiry` implement the two procedures; this module sums up each
outcome as a typed value (:class:`V1Rewrite`, :class:`Expiry`, :class:`Vacuum`: dates as
ISO text, what XCom and the log show). The lake's Delta tables keep the files a commit
replaced, so that readers of an earlier version (time travel, a run still reading)
find them; :func:`vacuum_lake` deletes those older than :data:`LAKE_RETENTION`.
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict

from cdcgen.config import PipelineConfig
from cdcgen.core.generation import SourceMode
from cdcgen.core.time import EPOCH

if TYPE_CHECKING:
    from cdcgen.adapters.cql import CqlClient
    from cdcgen.adapters.publisher import CqlDescriptionPublisher

log = logging.getLogger(__name__)

LAKE_RETENTION = timedelta(days=7)
"""How long a file that a commit replaced stays in the lake: Delta's own default, far
longer than the longest run (``cdc_changes`` times out after 4 hours), so no run and
no reader that started before a commit loses a file it still reads."""


class RewriteSkipped(BaseModel):
    """The source is not in V1 mode: nothing to rewrite (``status`` says its mode)."""

    model_config = ConfigDict(frozen=True)

    status: str


class V1Rewrite(BaseModel):
    """What the rewrite did, generation timestamps as ISO text
    (:class:`~cdcgen.adapters.v1_rewrite.RewriteReport`)."""

    model_config = ConfigDict(frozen=True)

    status: str
    cdc_tables: int
    rewritten: tuple[str, ...]
    too_old: tuple[str, ...]
    already_present: tuple[str, ...]
    missing_description: tuple[str, ...]
    marker_written: bool


class Expiry(BaseModel):
    """Generations given ``expired`` (timestamp -> expiry, ISO text), and the pruning's
    outcome: the timestamps whose rows went, or why none did."""

    model_config = ConfigDict(frozen=True)

    cdc_tables: int
    expired: dict[str, str]
    pruned: tuple[str, ...] | str


class Vacuum(BaseModel):
    """Files deleted per lake table, and the tables left alone for not being Delta."""

    model_config = ConfigDict(frozen=True)

    retention_hours: int
    removed_files: dict[str, int]
    not_delta: tuple[str, ...]


def rewrite_v1(config: PipelineConfig) -> V1Rewrite | RewriteSkipped:
    """ScyllaDB 4.3 -> 4.4: copy live V1 generations to the V2 tables, then mark ``rewritten``.

    Only for a V1 source; other modes have nothing to rewrite.
    """
    from cdcgen.adapters.cdc_tables import CdcCatalog
    from cdcgen.adapters.cql import client_for
    from cdcgen.adapters.publisher import CqlDescriptionPublisher
    from cdcgen.adapters.v1_rewrite import rewrite_v1 as run_rewrite

    if config.source_mode != SourceMode.V1:
        return RewriteSkipped(status=f"skipped: the source is in {config.source_mode} mode, not v1")
    with client_for(config) as client:
        tables = CdcCatalog(client, config.source_schema).tables()
        publisher = CqlDescriptionPublisher(client, config)
        report = run_rewrite(client, config.source_schema, publisher, tables, datetime.now(UTC))
    result = V1Rewrite(
        status=report.status,
        cdc_tables=len(tables),
        rewritten=tuple(t.isoformat() for t in report.rewritten),
        too_old=tuple(t.isoformat() for t in report.too_old),
        already_present=tuple(t.isoformat() for t in report.already_present),
        missing_description=tuple(t.isoformat() for t in report.missing_description),
        marker_written=report.marker_written,
    )
    log.info("V1 -> V2 rewrite: %s", result.model_dump(mode="json"))
    return result


def expire_superseded(config: PipelineConfig) -> Expiry:
    """Set ``expired`` on superseded generations older than every CDC table's TTL."""
    from cdcgen.adapters.cdc_tables import CdcCatalog
    from cdcgen.adapters.cql import client_for
    from cdcgen.adapters.expiry import expire_superseded as mark_expired
    from cdcgen.adapters.publisher import CqlDescriptionPublisher

    with client_for(config) as client:
        tables = CdcCatalog(client, config.source_schema).tables()
        publisher = CqlDescriptionPublisher(client, config)
        marked = mark_expired(publisher, tables)
        pruned = prune(config, client, publisher)
    result = Expiry(
        cdc_tables=len(tables),
        expired={e.timestamp.isoformat(): e.expired.isoformat() for e in marked},
        pruned=pruned,
    )
    log.info("expired %d superseded generation(s): %s", len(marked), result.expired)
    return result


def prune(
    config: PipelineConfig, client: CqlClient, publisher: CqlDescriptionPublisher
) -> tuple[str, ...] | str:
    """Delete the description rows of generations expired ``prune_expired_after`` ago, when
    that is set, never in ScyllaDB's own ``system_distributed`` and never a generation a
    table of the changes pipeline still reads (one with no watermark yet holds all back)."""
    from cdcgen.adapters.checkpoints import PROGRESS_TABLE, CqlCheckpointStore
    from cdcgen.adapters.expiry import prune_descriptions

    if config.prune_expired_after is None:
        return "not configured (CDCGEN_PRUNE_EXPIRED_AFTER_SECONDS)"
    if not publisher.owns_schema:
        return "not pruned: ScyllaDB owns the description tables of system_distributed"
    needed_from = None
    state = client.cluster.metadata.keyspaces.get(config.checkpoint_keyspace)
    if state is not None and PROGRESS_TABLE in state.tables:
        progress = CqlCheckpointStore(client, state.name).all_progress()
        marks = [p.watermark for p in progress]
        known = [mark for mark in marks if mark is not None]
        needed_from = EPOCH if len(known) < len(marks) else (min(known) if known else None)
    deleted = prune_descriptions(publisher, config.prune_expired_after, needed_from=needed_from)
    log.info("deleted the description rows of %d expired generation(s)", len(deleted))
    return tuple(t.isoformat() for t in deleted)


def vacuum_lake(config: PipelineConfig, retention: timedelta = LAKE_RETENTION) -> Vacuum:
    """Delete the files no version younger than ``retention`` needs, table by table:
    the generations tables and every changes table.

    Time travel reaches back ``retention``, no further. Files no commit ever named (a
    killed writer's) go too, once older than ``retention``: it is longer than any run,
    so no file of a run still writing is among them. The generations' documents are
    not data files of a table and stay. A table that is not Delta (a lake not migrated
    yet) is left alone and named.
    """
    from cdcgen.adapters.delta_tables import delta_table, is_delta
    from cdcgen.adapters.lake_store import LakeLocation
    from cdcgen.changes.layout import table_roots
    from cdcgen.generation_lake.lake_tables import GENERATIONS_DIR, STREAM_SETS_DIR

    removed: dict[str, int] = {}
    skipped: list[str] = []
    hours = int(retention.total_seconds() // 3600)
    lake = LakeLocation.of(config.lake_path)
    generations = [lake / GENERATIONS_DIR, lake / STREAM_SETS_DIR]
    for root in [*generations, *table_roots(config.lake_path)]:
        if root in generations and not root.exists():
            continue
        if not is_delta(root):
            skipped.append(root.name)
            continue
        deleted = delta_table(root).vacuum(
            retention_hours=hours, dry_run=False, enforce_retention_duration=False, full=True
        )
        removed[root.name] = len(deleted)
    result = Vacuum(retention_hours=hours, removed_files=removed, not_delta=tuple(skipped))
    log.info("vacuumed the lake %s: %s", config.lake_path, result.model_dump(mode="json"))
    return result
