"""Report pages people would rather look at than read.

Tasks describe each run in a plain record (:mod:`cdcgen.reports.records`) and call
:func:`record_run`, which writes ``<report_dir>/runs/<key>.json`` and rebuilds the
static site (:mod:`cdcgen.reports.site`): an index of every run, one summary page
per generation (counts, pass/fail per expectation, the ring as a picture,
distributions), a changes page (lag, watermark, rows per generation) and a
replication page (per sink table: consistency point, lag, changes not applied; its
runs call :func:`record_replication` with records of their own).  The
pages are self-contained HTML with inline CSS and SVG: they open from disk, from
the Airflow UI (:mod:`cdcgen.airflow.reports_plugin`) or in a headless browser.

Rebuild by hand: ``python -m cdcgen.reports [--report-dir DIR]``.
"""

from __future__ import annotations

from cdcgen.reports.records import (
    ChangesReport,
    ExpectationOutcome,
    GenerationCounts,
    GenerationReport,
    GenerationRows,
    RingEntry,
    RunRecord,
    RunStatus,
    TableLag,
)
from cdcgen.reports.site import (
    build_site,
    load_records,
    record_replication,
    record_run,
    save_record,
)

__all__ = [
    "ChangesReport",
    "ExpectationOutcome",
    "GenerationCounts",
    "GenerationReport",
    "GenerationRows",
    "RingEntry",
    "RunRecord",
    "RunStatus",
    "TableLag",
    "build_site",
    "load_records",
    "record_replication",
    "record_run",
    "save_record",
]
