"""What a ``cdc_replication`` run did, in the shape of every DAG's summary.

Written to ``<report_dir>/summaries/replication/<run id>.json`` and returned by the DAG's
last task, as the other two DAGs' summaries are. ``problems`` names every planned table
that has no record of this run (its bootstrap or its apply failed) and every one whose
sink refused some changes (the apply fails after recording them); an empty list means
every table was brought forward (or, in a dry run, said what it would do).
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict

from cdcgen.core.replication_record import ReplicationRecord, ReplicationRunStatus
from cdcgen.pipeline.run_summary import RunSummary

#: Under the report directory: one summary per replication run.
SUMMARIES_DIR = "summaries/replication"


class TableReplication(BaseModel):
    """One sink table's part of a run; a table with no record has its ``status`` only."""

    model_config = ConfigDict(frozen=True)

    status: ReplicationRunStatus
    sink_table: str | None = None
    consistent_until: str | None = None
    lag_seconds: float | None = None
    applied_log_rows: int = 0
    rejected_count: int = 0

    @classmethod
    def of(cls, record: ReplicationRecord) -> TableReplication:
        return cls(
            status=record.status,
            sink_table=record.sink_table,
            consistent_until=record.consistent_until,
            lag_seconds=record.lag_seconds,
            applied_log_rows=record.applied_log_rows,
            rejected_count=record.rejected_count,
        )


class ReplicationRunSummary(RunSummary):
    """A ``cdc_replication`` run (see the module doc)."""

    tables: dict[str, TableReplication]
    applied_log_rows: int


def replication_run_summary(
    run_id: str, planned: Sequence[str] | None, records: Sequence[ReplicationRecord]
) -> ReplicationRunSummary:
    """The run's summary: every planned table's record, or why it has none."""
    by_table = {record.source_table: record for record in records}
    tables: dict[str, TableReplication] = {}
    problems: list[str] = []
    if planned is None:
        problems.append("planning failed: no table was examined")
    for table in planned or ():
        record = by_table.get(table)
        if record is None:
            problems.append(f"{table}: not replicated (its bootstrap or apply task failed)")
            tables[table] = TableReplication(status=ReplicationRunStatus.NOT_REPLICATED)
            continue
        tables[table] = TableReplication.of(record)
        if record.rejected_count:
            problems.append(
                f"{table}: {record.rejected_count} change(s) not applied, recorded in "
                f"{record.sink_table.partition('.')[0]}.cdc_replication_rejects"
            )
    return ReplicationRunSummary(
        run_id=run_id,
        tables=tables,
        applied_log_rows=sum(t.applied_log_rows for t in tables.values()),
        problems=tuple(problems),
    )
