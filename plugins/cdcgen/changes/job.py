"""One whole changes run for one table: extract, validate, record. What the DAG calls.

``spark/extract_changes.py`` (spark-submit) and an in-process task both call
:func:`run_changes`; the DAG's wait step uses :func:`window_close_time` with the node
clocks (every node at or past it) before starting it. Errors keep their classes:
:class:`~.windows.DataExpired` and :class:`~.row_checks.ChangesInvalid` are terminal (do
not retry), :class:`~.stream_reader.TransientReadError` is worth a retry.
"""

from __future__ import annotations

import logging
from datetime import datetime
from typing import TYPE_CHECKING, Any

from cdcgen.changes.settings import ChangesSettings
from cdcgen.core.cdc_log import TableRef
from cdcgen.core.time import as_utc
from cdcgen.core.windows import DataExpired, Interval, Mode

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from cdcgen.config import PipelineConfig

log = logging.getLogger(__name__)

#: Offending rows per check carried in the run's JSON (the report pages list them all).
SAMPLES_IN_OUTPUT = 5


def window_close_time(config: PipelineConfig, interval_end: datetime) -> datetime:
    """Every node's clock must be at or past this before ``interval_end`` can be read."""
    return as_utc(interval_end) + config.generation_leeway + config.confidence_window


def run_changes(
    config: PipelineConfig,
    table: TableRef,
    interval: Interval,
    *,
    settings: ChangesSettings | None = None,
    mode: Mode = Mode.INCREMENTAL,
    run_id: str | None = None,
    validate: bool = True,
    dag_id: str = "",
    spark: SparkSession | None = None,
) -> dict[str, Any]:
    """Extract ``table``'s closed windows for ``interval``, check them, record the run.

    Returns the extraction's JSON plus ``checks`` (passed, summary, Data Docs) and the
    report page. Raises :class:`~.row_checks.ChangesInvalid` after recording a failed
    check, and :class:`~.windows.DataExpired` after recording the failure.
    """
    from cdcgen.adapters.clocks import clock_reader_for
    from cdcgen.adapters.cql import connect
    from cdcgen.adapters.generation_sources import source_for
    from cdcgen.changes.checkpoints import CheckpointStore
    from cdcgen.changes.extract import changes_spark_session, extract_changes
    from cdcgen.changes.log_table import describe_log_table
    from cdcgen.changes.report import record_changes_run
    from cdcgen.changes.row_frames import validate_extraction
    from cdcgen.validation.results import ChangesInvalid

    settings = settings or ChangesSettings.from_env()
    session = spark or changes_spark_session()
    client = connect(config.contact_points, config.port)
    try:
        store = CheckpointStore(client, config.target_keyspace)
        store.ensure_schema()
        floor = store.table_state(table).floor
        since = (
            interval.start if floor is None or mode is Mode.BACKFILL else min(floor, interval.start)
        )
        generations = source_for(client, config).spans(table, since=since, until=interval.end)
        clocks = clock_reader_for(client, config).read_clocks()
        try:
            result = extract_changes(
                session, config, settings, table, generations, interval, clocks,
                mode=mode, run_id=run_id, client=client,
            )  # fmt: skip
        except DataExpired as exc:
            log.error("%s", exc)
            raise
        output = result.to_json()
        checks = None
        if validate and result.windows:
            log_table = describe_log_table(client, table, settings, config.source_schema)
            checks = validate_extraction(session, config, settings, result, generations, log_table)
            output["checks"] = {
                "passed": checks.passed,
                "summary": checks.summary,
                "data_docs": str(checks.report_index),
                "checks": [
                    {
                        "check": c.check,
                        "passed": c.passed,
                        "observed": c.observed,
                        "samples": [dict(row) for row in c.samples[:SAMPLES_IN_OUTPUT]],
                    }
                    for c in checks.checks
                ],
                "failed": [c.describe() for c in checks.failures],
            }
        page = record_changes_run(config.report_dir, result, checks, dag_id=dag_id)
        output["report"] = str(page)
        if checks is not None and checks.page is not None:
            output["checks"]["page"] = str(checks.page)
        output["status"] = "done" if checks is None or checks.passed else "row checks failed"
        if checks is not None and not checks.passed:
            failure = ChangesInvalid(checks)
            failure.output = output  # what was written and why it failed, for the caller
            raise failure
        return output
    finally:
        client.close()
