"""The ``cdc_changes`` pipeline, one function per DAG step: plan the tables, summarise.

The extraction itself is ``spark/extract_changes.py`` (spark-submit), which calls
:func:`cdcgen.changes.job.run_changes_job` and writes its JSON result to a file of
:mod:`cdcgen.pipeline.result_files` (one per attempt); this module decides what each
run extracts (and hands the job its whole configuration as ``CDCGEN_*`` variables) and
reads those files back.
Like the generations steps (:mod:`.detect`, :mod:`.publish`), it knows nothing of
Airflow; the plan is plain JSON (:class:`PlannedTable`) because it travels through XCom
and mapped task groups, and the summary holds each table's outcome, the one model of
its run (:class:`~cdcgen.core.changes_result.ChangesRunResult`), from which it derives
the table's part of its JSON.

Which interval a run covers:

* a **scheduled** run: its data interval; windows still start at each stream's
  checkpoint, so a late or skipped run loses nothing;
* a **backfill** run: its data interval, in ``backfill`` mode (the interval's windows
  are re-read and replace exactly their own lake output);
* a **manual** or **asset-triggered** run (a generation was just published): from its
  data interval's start up to the moment it was triggered, so it takes every change
  written so far instead of stopping at the last cron tick.

Every window is read only once every node's clock is past its end + leeway + the
confidence window (the DAG's wait step, :func:`window_end_ms`).

A run of the DAG's continuous mode (``follow``) extracts from its interval's start
until the plan's moment + ``follow``, a cycle at a time as windows close
(:mod:`cdcgen.changes.table_follow`); its wait step waits only for the interval's start.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TypedDict

from pydantic import JsonValue, field_serializer

from cdcgen.adapters.cdc_tables import CdcCatalog
from cdcgen.adapters.cql import client_for
from cdcgen.changes.settings import ChangesSettings
from cdcgen.config import PipelineConfig
from cdcgen.core.cdc_log import TableRef
from cdcgen.core.changes_result import ChangesRunResult
from cdcgen.core.changes_status import ChangesRunStatus
from cdcgen.core.time import floor_ms, to_millis
from cdcgen.pipeline.errors import BackfillNotFollowed, NoTables
from cdcgen.pipeline.result_files import read_result, result_path
from cdcgen.pipeline.run_summary import RunSummary, write_summary
from cdcgen.spark_runtime.session import submit_env

log = logging.getLogger(__name__)

#: Under the report directory: one summary per run (``make demo`` reads the newest).
SUMMARIES_DIR = "summaries/changes"

#: ``DagRun.run_type`` values (``airflow.utils.types.DagRunType``).
BACKFILL, SCHEDULED = "backfill", "scheduled"


class PlannedTable(TypedDict):
    """One table of a run's plan, as XCom hands it to the table's mapped tasks (its wait
    and its Spark job) and to the summary."""

    table: str
    window_end_ms: int
    spark_args: list[str]
    env_vars: dict[str, str]


def run_interval(
    run_type: str,
    interval_start: datetime | None,
    interval_end: datetime | None,
    run_after: datetime | None,
) -> tuple[datetime, datetime, str]:
    """``(start, end, mode)`` of a run (see the module doc). Times are UTC, ms precision."""
    on_schedule = run_type in (BACKFILL, SCHEDULED) and interval_end is not None
    end = floor_ms(interval_end if on_schedule and interval_end else run_after or datetime.now(UTC))
    start = floor_ms(interval_start) if interval_start is not None else end
    if start >= end:  # no data interval (an asset event alone): the last millisecond
        start = end - timedelta(milliseconds=1)
    mode = "backfill" if run_type == BACKFILL else "incremental"
    return start, end, mode


def window_end_ms(end: datetime) -> int:
    """The window end in ms: the wait step needs every clock past it + leeway + confidence."""
    return to_millis(floor_ms(end))


def configured_tables(config: PipelineConfig, requested: str = "") -> list[str]:
    """The run's tables: the ``tables`` Param, else the connection's ``cdc_tables``, else
    every CDC-enabled table the cluster has (``keyspace.table``, sorted)."""
    text = requested.strip() or str(config.extra.get("cdc_tables", "")).strip()
    if text:
        return [table.qualified for table in TableRef.parse_list(text)]
    with client_for(config) as client:
        found = [t.name for t in CdcCatalog(client, config.source_schema).tables()]
    if not found:
        raise NoTables(
            f"no CDC-enabled table on {','.join(config.contact_points)}; enable CDC on a "
            "table, or name tables in the cdc_source connection's cdc_tables extra or "
            "the run's `tables` Param"
        )
    return found


def plan(
    config: PipelineConfig,
    *,
    run_type: str,
    interval_start: datetime | None,
    interval_end: datetime | None,
    run_after: datetime | None,
    run_id: str,
    dag_id: str,
    tables: str = "",
    follow: timedelta | None = None,
) -> list[PlannedTable]:
    """One entry per table for the mapped task group: what to read and how to start Spark.

    With ``follow``, each table's job follows it until now + ``follow`` (see the
    module doc).

    The Spark job gets the whole configuration as ``CDCGEN_*`` variables
    (:meth:`PipelineConfig.to_env`, :meth:`ChangesSettings.to_env`): the connection,
    the run's Params and the read tuning reach it exactly as the tasks saw them.
    """
    start, end, mode = run_interval(run_type, interval_start, interval_end, run_after)
    settings = ChangesSettings.from_env()
    env = {**submit_env(), **config.to_env(), **settings.to_env()}
    if follow is not None and mode != "incremental":
        raise BackfillNotFollowed(
            "a backfill re-reads its data interval once: run it on a changes DAG built "
            "without `follow` (the scheduled mode), not on the continuous one"
        )
    bound = ("--interval-end", end.isoformat())
    if follow is not None:
        bound = ("--follow-until", floor_ms(datetime.now(UTC) + follow).isoformat())
    planned: list[PlannedTable] = []
    for table in configured_tables(config, tables):
        arguments = {
            "--table": table,
            "--interval-start": start.isoformat(),
            bound[0]: bound[1],
            "--mode": mode,
            "--run-id": run_id,
            "--dag-id": dag_id,
            "--output": str(result_path(config.report_dir, run_id, table)),
        }
        planned.append(
            PlannedTable(
                table=table,
                window_end_ms=window_end_ms(start if follow is not None else end),
                spark_args=[part for pair in arguments.items() for part in pair],
                env_vars=env,
            )
        )
    log.info(
        "%s run: %s [%s, %s) for %d table(s): %s",
        run_type,
        mode if follow is None else "follow",
        start.isoformat(),
        bound[1],
        len(planned),
        ", ".join(p["table"] for p in planned),
    )
    return planned


def table_summary(outcome: ChangesRunResult) -> dict[str, JsonValue]:
    """A table's part of the summary's JSON, from its run's outcome; a table whose job
    wrote no result has its ``status`` only."""
    if outcome.status is ChangesRunStatus.NOT_EXTRACTED:
        return {"status": outcome.status.value}
    checks = outcome.checks
    return {
        "status": outcome.status.value,
        "rows": outcome.rows_written,
        "windows": len(outcome.windows),
        "pending": len(outcome.pending),
        "watermark": outcome.watermark,
        "lake_versions": list(outcome.lake_versions),
        "colocation": outcome.colocation,
        "checks": outcome.checks_passed,
        "failed_checks": [] if checks is None else list(checks.failed),
        "report": outcome.report,
        "data_docs": None if checks is None else checks.data_docs,
    }


class ChangesRunSummary(RunSummary):
    """A ``cdc_changes`` run (see :func:`changes_run_summary`): each table's outcome,
    and the verdicts over them all."""

    tables: dict[str, ChangesRunResult]
    changes_rows: int
    colocation: str
    checks: str
    watermarks: dict[str, str | None]
    lake_format: str
    lake_versions: dict[str, tuple[int, ...]]

    @field_serializer("tables")
    def _table_summaries(
        self, tables: dict[str, ChangesRunResult]
    ) -> dict[str, dict[str, JsonValue]]:
        return {name: table_summary(outcome) for name, outcome in tables.items()}


def changes_run_summary(
    config: PipelineConfig, run_id: str, planned: Sequence[PlannedTable] | None
) -> ChangesRunSummary:
    """What a run did for every table, as one summary (also written for ``make demo``).

    ``changes_rows``: rows written to the lake; ``colocation``: ``passed`` only if
    every table that extracted rows ran the check and passed it; ``checks`` the same
    over all row checks; ``problems`` says why a run must fail (table not extracted,
    checks failed, data expired), and is empty on success; ``lake_versions`` the
    Delta table versions each table's run committed (read them back with time travel).
    """
    tables: dict[str, ChangesRunResult] = {}
    problems: list[str] = []
    if planned is None:
        problems.append("planning failed: no table was examined")
    for item in planned or ():
        table = str(item["table"])
        result = read_result(config.report_dir, run_id, table)
        if result is None:
            problems.append(f"{table}: not extracted (its wait or Spark job failed)")
            result = ChangesRunResult(table=table, status=ChangesRunStatus.NOT_EXTRACTED)
        elif result.failed:
            problems.append(f"{table}: {result.status}: {result.error}".rstrip(": "))
        tables[table] = result
    extracted = [t for t in tables.values() if t.windows]
    verdicts = [t.colocation for t in extracted]
    checked = [t.checks_passed for t in extracted]
    summary = ChangesRunSummary(
        run_id=run_id,
        tables=tables,
        changes_rows=sum(t.rows_written for t in tables.values()),
        colocation=_verdict(verdicts, failed="failed" in verdicts),
        checks=_verdict(checked, failed=False in checked),
        watermarks={name: t.watermark for name, t in tables.items()},
        lake_format="delta",
        lake_versions={name: t.lake_versions for name, t in tables.items()},
        problems=tuple(problems),
    )
    write_summary(Path(config.report_dir) / SUMMARIES_DIR, summary)
    return summary


def _verdict(values: Sequence[str | bool | None], *, failed: bool) -> str:
    if failed:
        return "failed"
    if not values:
        return "none"
    return "passed" if all(v in (True, "passed") for v in values) else "incomplete"
