"""Validate the rows a changes run wrote, with Great Expectations: the change gate.

The rules (``expectations/changes_rows.json`` and ``changes_counts.json``, implemented in
:mod:`.change_expectations`):

* colocation: each row's stream is the one the generation operating at its write time
  maps ``Murmur3(base partition key)`` to (vectorized :class:`~cdcgen.core.lookup.StreamLookup`
  for vnode generations, a sorted search over stream tokens for tablets);
* the row's ``cdc$time`` lies in its window and in its generation's span, ± leeway;
* complete batches (``batch_seq_no`` dense from 0, ``end_of_batch`` exactly on the last);
* no duplicates by (stream, ``cdc$time``, ``batch_seq_no``); known operation codes;
* per stream and window, the lake's row count equals the source's ``COUNT(*)`` (when the
  run asked for the source's counts; skipped, and said so, otherwise).

The frames are prepared on the changes side (:mod:`cdcgen.changes.row_frames`); here
they are only checked. Every failure names its offending rows (stream, ``cdc$time``,
``batch_seq_no``, base key) in the GX results, in Data Docs under the run's report
directory (the same runner and site conventions as the generation suites), on the run's
checks page (:mod:`cdcgen.reports.checks_page`) and in the result's summary.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from cdcgen.reports.checks_page import checks_page_path, write_checks_page
from cdcgen.validation.gx_runner import SparkFrames, run_suites
from cdcgen.validation.results import ValidationResult, summary_text
from cdcgen.validation.suites import CHANGE_SUITES, load_suites

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

ROWS_BATCH = "changes_rows"
COUNTS_BATCH = "changes_stream_counts"
#: Offending rows kept per failed check: what the checks page lists.
SAMPLES_PER_FAILURE = 50


def validate_change_frames(
    rows: DataFrame,
    counts: DataFrame | None,
    *,
    report_dir: Path,
    run_name: str,
    expectations_dir: Path | None = None,
) -> ValidationResult:
    """Run the change suites on prepared frames; Data Docs and the checks page go to
    ``report_dir``.

    ``counts`` is the lake-against-source frame, None when the run did not count the
    source (the count check is then reported as skipped). The rows are cached for the
    run: every rule scans them.
    """
    available = () if counts is None else ("source_counts",)
    suites = load_suites(expectations_dir, available, family=CHANGE_SUITES)
    skipped = [f"{suite.name}: {name}" for suite in suites for name in suite.skipped]
    rows = rows.cache()
    frames = {ROWS_BATCH: rows} if counts is None else {ROWS_BATCH: rows, COUNTS_BATCH: counts}
    try:
        checks, index = run_suites(
            [suite for suite in suites if suite.expectations],  # a skipped batch has no frame
            SparkFrames(frames),
            {},
            report_dir,
            run_name,
            max_samples=SAMPLES_PER_FAILURE,
        )
    finally:
        rows.unpersist()
    page = checks_page_path(report_dir)
    result = ValidationResult(
        passed=all(check.passed for check in checks),
        checks=checks,
        report_index=index,
        summary=summary_text(f"changes {run_name}", checks, skipped, index, page=page),
        skipped=skipped,
        page=page,
    )
    write_checks_page(report_dir, run_name, checks, skipped, index)
    return result
