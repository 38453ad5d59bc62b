"""A changes run's row-check verdicts: one per job, combined into the run's result.

The orchestrator (:mod:`.changes_run`) checks each job's rows before checkpointing it; the run's
result and its report carry one verdict, with one outcome per check over every job.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from cdcgen.core.changes_result import CheckEntry, RowChecks
from cdcgen.reports.checks_page import write_checks_page
from cdcgen.validation.results import CheckOutcome, ValidationResult

#: Offending rows per check carried in the run's JSON (the report pages list them all).
SAMPLES_IN_OUTPUT = 5


def job_report_dir(run_dir: Path, job: int) -> Path:
    """Where job ``job`` of a run of several jobs puts its Data Docs and checks page;
    the run's own checks page (:func:`combined`) goes in ``run_dir``."""
    return run_dir / f"job-{job}"


def combined(verdicts: Sequence[ValidationResult], label: str) -> ValidationResult:
    """One verdict for a run from its jobs' (each job's Data Docs and checks page in its
    own folder, ``<run>/job-N/``): one outcome per check, its offending rows and counts
    summed over the jobs, on a checks page of the run's own in ``<run>/`` that links the
    first failing job's Data Docs (else the last one's)."""
    if len(verdicts) == 1:
        return verdicts[0]
    merged: dict[tuple[str, str, str], CheckOutcome] = {}
    for check in (c for v in verdicts for c in v.checks):
        key = (check.suite, check.expectation, check.check)
        seen = merged.get(key)
        merged[key] = check if seen is None else _merged(seen, check)
    shown = next((v for v in verdicts if not v.passed), verdicts[-1])
    checks = list(merged.values())
    skipped = sorted({skip for v in verdicts for skip in v.skipped})
    pages = [v.page for v in verdicts if v.page is not None]
    page = None
    if pages:
        run_dir = pages[0].parent.parent  # <run>/job-N/checks.html (job_report_dir)
        page = write_checks_page(run_dir, label, checks, skipped, shown.report_index)
    return ValidationResult(
        all(v.passed for v in verdicts),
        checks,
        shown.report_index,
        "; ".join(f"job {n}: {v.summary}" for n, v in enumerate(verdicts, 1)),
        skipped,
        page,
    )


def _merged(a: CheckOutcome, b: CheckOutcome) -> CheckOutcome:
    """Two jobs' outcomes of one check: counts of offending rows add up."""
    first, second = a.observed, b.observed
    observed = first + second if isinstance(first, int) and isinstance(second, int) else second
    return replace(
        a, passed=a.passed and b.passed, observed=observed, samples=a.samples + b.samples
    )


def row_checks(checks: ValidationResult) -> RowChecks:
    """The row checks' verdicts as the run's result carries them (a few rows per check)."""
    return RowChecks(
        passed=checks.passed,
        summary=checks.summary,
        data_docs=str(checks.report_index),
        checks=tuple(
            CheckEntry(
                check=c.check,
                passed=c.passed,
                observed=c.observed,
                samples=tuple(dict(row) for row in c.samples[:SAMPLES_IN_OUTPUT]),
            )
            for c in checks.checks
        ),
        failed=tuple(c.describe() for c in checks.failures),
        **({} if checks.page is None else {"page": str(checks.page)}),
    )
