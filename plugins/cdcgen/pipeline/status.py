"""The pipeline's state tables, read and never written: what the status commands show
(the model: :mod:`cdcgen.core.pipeline_status`).

The stores that own these tables (:mod:`cdcgen.adapters.checkpoints`,
:mod:`cdcgen.adapters.sink_state`) create them on first use and add the columns later
versions brought, which is right for a run and wrong for a look: a status asked for with
a mistyped keyspace must say so, not create it, and one asked of an older deployment must
not alter its tables. So the reads here check the schema first (``system_schema``, not
the driver's cache), select every column (``*``: a column an older version lacks is then
simply absent, read as unset) and send nothing but ``SELECT``.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from cdcgen.adapters.checkpoints import CHECKPOINTS_TABLE, PROGRESS_TABLE
from cdcgen.adapters.sink_state import COPY as SINK_COPY
from cdcgen.adapters.sink_state import PROGRESS as SINK_PROGRESS
from cdcgen.adapters.sink_state import REJECTS as SINK_REJECTS
from cdcgen.core.cdc_log import TableRef
from cdcgen.core.copy_progress import CopiedRange, CopyProgress
from cdcgen.core.errors import StateMissing
from cdcgen.core.identifiers import check_identifier
from cdcgen.core.pipeline_status import (
    ChangesStatus,
    ReplicationStatus,
    changes_status,
    replication_status,
)
from cdcgen.core.replication_plan import SinkProgress
from cdcgen.core.time import naive_as_utc
from cdcgen.core.token_ranges import TokenRange
from cdcgen.core.watermark import BucketCheckpoint, TableProgress

if TYPE_CHECKING:
    from cdcgen.adapters.cql import CqlClient


def _utc(value: datetime | None) -> datetime | None:
    return None if value is None else naive_as_utc(value)


def _cell(row: Any, column: str) -> Any:
    return getattr(row, column, None)


def keyspace_exists(client: CqlClient, keyspace: str) -> bool:
    rows = client.execute(
        "SELECT keyspace_name FROM system_schema.keyspaces WHERE keyspace_name = %s",
        (keyspace,),
    )
    return bool(list(rows))


def require_table(client: CqlClient, keyspace: str, table: str, hint: str) -> None:
    """:class:`StateMissing` naming the keyspace or the table that is not there."""
    check_identifier(keyspace, "keyspace")
    if not keyspace_exists(client, keyspace):
        raise StateMissing(f"keyspace {keyspace} does not exist: {hint}")
    if not client.table_exists(f"{keyspace}.{table}"):
        raise StateMissing(f"{keyspace}.{table} does not exist: {hint}")


def _progress(row: Any) -> TableProgress:
    """A progress row as the store reads it, less the TTL record no status shows."""
    return TableProgress(
        TableRef(row.keyspace_name, row.table_name),
        _utc(_cell(row, "started_at")),
        _utc(_cell(row, "watermark")),
        _utc(_cell(row, "watermark_updated_at")),
        _cell(row, "run_id") or "",
        _cell(row, "lake_version"),
        _utc(_cell(row, "rebootstrapped_at")),
    )


def _newest_checkpoint(
    client: CqlClient, keyspace: str, table: TableRef
) -> BucketCheckpoint | None:
    rows = client.execute(
        f"SELECT * FROM {keyspace}.{CHECKPOINTS_TABLE} "
        "WHERE keyspace_name = %s AND table_name = %s",
        (table.keyspace, table.table),
    )
    saved = [
        BucketCheckpoint(
            naive_as_utc(row.generation),
            row.bucket,
            naive_as_utc(row.checkpoint),
            run_id=_cell(row, "run_id") or "",
            updated_at=naive_as_utc(row.updated_at),
        )
        for row in rows
        if row.checkpoint is not None and _cell(row, "updated_at") is not None
    ]
    return max(saved, key=lambda c: c.updated_at or c.checkpoint, default=None)


def read_changes_status(
    client: CqlClient, keyspace: str, now: datetime, tables: Sequence[TableRef] = ()
) -> list[ChangesStatus]:
    """Every table the changes pipeline keeps state for in ``keyspace`` (or ``tables``),
    sorted by name; a table named but never run is left out."""
    hint = (
        "no changes run has saved state there (the state keyspace is CDCGEN_STATE_KEYSPACE, "
        "else CDCGEN_TARGET_KEYSPACE)"
    )
    require_table(client, keyspace, PROGRESS_TABLE, hint)
    query = f"SELECT * FROM {keyspace}.{PROGRESS_TABLE}"
    if tables:
        rows = [
            row
            for table in tables
            for row in client.execute(
                query + " WHERE keyspace_name = %s AND table_name = %s",
                (table.keyspace, table.table),
            )
        ]
    else:
        rows = list(client.execute(query))
    checkpoints = client.table_exists(f"{keyspace}.{CHECKPOINTS_TABLE}")
    found = []
    for progress in sorted(map(_progress, rows), key=lambda p: p.table.qualified):
        newest = _newest_checkpoint(client, keyspace, progress.table) if checkpoints else None
        found.append(changes_status(progress, newest, now))
    return found


def sink_keyspaces(client: CqlClient) -> list[str]:
    """The keyspaces of a cluster that hold a sink's replication state, sorted."""
    rows = client.execute("SELECT keyspace_name, table_name FROM system_schema.tables")
    return sorted({row.keyspace_name for row in rows if row.table_name == SINK_PROGRESS})


def read_replication_status(
    client: CqlClient, keyspace: str, now: datetime
) -> list[ReplicationStatus]:
    """Every sink table whose state ``keyspace`` holds, by source then sink table."""
    hint = (
        "no replication has run into it (the state lives in the sink table's keyspace, "
        "on the sink cluster: CDCGEN_SINK_*)"
    )
    require_table(client, keyspace, SINK_PROGRESS, hint)
    progress: dict[tuple[str, str, str], SinkProgress] = {}
    for row in client.execute(f"SELECT * FROM {keyspace}.{SINK_PROGRESS}"):
        key = (row.source_keyspace, row.source_table, row.sink_table)
        progress[key] = SinkProgress(
            TableRef(row.source_keyspace, row.source_table),
            TableRef.parse(row.sink_table),
            _utc(_cell(row, "consistent_until")),
            _utc(_cell(row, "bootstrapped_at")),
            _cell(row, "lake_version"),
            _cell(row, "run_id") or "",
            _utc(_cell(row, "updated_at")),
        )
    copies, started = _copies(client, keyspace)
    rejects: dict[tuple[str, str, str], Counter[str]] = defaultdict(Counter)
    if client.table_exists(f"{keyspace}.{SINK_REJECTS}"):
        for row in client.execute(
            f"SELECT source_keyspace, source_table, sink_table, run_id "
            f"FROM {keyspace}.{SINK_REJECTS}"
        ):
            rejects[(row.source_keyspace, row.source_table, row.sink_table)][row.run_id or ""] += 1
    for key in copies.keys() - progress.keys():
        progress[key] = SinkProgress(TableRef(key[0], key[1]), TableRef.parse(key[2]))
    return [
        replication_status(
            progress[key], copies.get(key), rejects[key], now, copy_started_at=started.get(key)
        )
        for key in sorted(progress)
    ]


def _copies(
    client: CqlClient, keyspace: str
) -> tuple[dict[tuple[str, str, str], CopyProgress], dict[tuple[str, str, str], datetime]]:
    """The unfinished copies (:meth:`cdcgen.adapters.sink_state.CqlSinkState.copy_progress`,
    every table's at once)
    and when each started."""
    if not client.table_exists(f"{keyspace}.{SINK_COPY}"):
        return {}, {}
    rows: dict[tuple[str, str, str], list[Any]] = defaultdict(list)
    for row in client.execute(f"SELECT * FROM {keyspace}.{SINK_COPY}"):
        rows[(row.source_keyspace, row.source_table, row.sink_table)].append(row)
    copies, started = {}, {}
    for key, ranges in rows.items():
        head = ranges[0]
        if head.snapshot_at is None:
            continue
        done = tuple(
            CopiedRange(TokenRange(r.range_start, r.range_end), r.row_count or 0, r.run_id or "")
            for r in ranges
            if r.range_end is not None and r.range_start is not None
        )
        copies[key] = CopyProgress(
            naive_as_utc(head.snapshot_at), bool(head.replaces_rows), head.started_by or "", done
        )
        if head.started_at is not None:
            started[key] = naive_as_utc(head.started_at)
    return copies, started
