"""Validate the rows a changes run wrote, with Great Expectations, on the report site.

The rules (``expectations/changes_rows.json`` and ``changes_counts.json``, implemented in
:mod:`.row_expectations`):

* colocation: each row's stream is the one the generation operating at its write time
  maps ``Murmur3(base partition key)`` to (vectorized :class:`~cdcgen.core.lookup.StreamLookup`
  for vnode generations, a sorted search over stream tokens for tablets);
* the row's ``cdc$time`` lies in its window and in its generation's span, ± leeway;
* complete batches (``batch_seq_no`` dense from 0, ``end_of_batch`` exactly on the last);
* no duplicates by (stream, ``cdc$time``, ``batch_seq_no``); known operation codes;
* per stream and window, the lake's row count equals the source's ``COUNT(*)``.

Every failure names its offending rows (stream, ``cdc$time``, ``batch_seq_no``, base key)
in the GX results, in Data Docs under ``<report_dir>/changes/<table>/<run>/`` (the same
runner and site conventions as the generation suites) and in :attr:`RowCheckResult.summary`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cdcgen.config import REPO_ROOT

if TYPE_CHECKING:
    from pyspark.sql import DataFrame


SUITE_FILES = ("changes_rows.json", "changes_counts.json")
ROWS_BATCH = "changes_rows"
COUNTS_BATCH = "changes_stream_counts"
SAMPLES_PER_FAILURE = 50  # rows kept per failed check (the checks page shows them)
SUMMARY_ROWS = 5


class ChangesInvalid(Exception):
    """Terminal: extracted rows broke a rule; the message names the offending rows."""

    def __init__(self, result: RowCheckResult) -> None:
        super().__init__(result.summary)
        self.result = result
        #: The run's JSON (rows written, windows, checks) when raised by ``run_changes``.
        self.output: dict[str, Any] | None = None


@dataclass(frozen=True)
class RowCheck:
    suite: str
    expectation: str
    check: str
    passed: bool
    observed: Any = None
    samples: tuple[Mapping[str, Any], ...] = ()
    error: str | None = None

    def describe(self) -> str:
        if self.error:
            return f"{self.check}: could not run: {self.error}"
        return f"{self.check}: {self.observed} offending row(s)"


@dataclass(frozen=True)
class RowCheckResult:
    passed: bool
    checks: list[RowCheck]
    report_index: Path
    summary: str
    skipped: list[str] = field(default_factory=list)
    page: Path | None = None  # checks.html: verdicts and offending rows by name

    @property
    def failures(self) -> list[RowCheck]:
        return [c for c in self.checks if not c.passed]

    def raise_if_failed(self) -> RowCheckResult:
        if not self.passed:
            raise ChangesInvalid(self)
        return self


# --- running the suites --------------------------------------------------------------------------


def load_change_suites(directory: Path | None = None) -> list[Any]:
    """The changes suites as the GX runner's :class:`SuiteSpec` (own batches, no GX import)."""
    from cdcgen.validation.suites import SuiteError, SuiteSpec, expectations_dir

    base = directory or expectations_dir()
    if not (base / SUITE_FILES[0]).is_file():
        base = REPO_ROOT / "expectations"
    specs = []
    for name in SUITE_FILES:
        path = base / name
        try:
            raw = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError) as exc:
            raise SuiteError(f"cannot read suite {path}: {exc}") from exc
        meta = raw.get("meta") or {}
        specs.append(
            SuiteSpec(
                name=str(raw["name"]),
                batch=str(meta["batch"]),
                expectations=tuple(raw["expectations"]),
                skipped=(),
                meta=meta,
                path=path,
            )
        )
    return specs


def check_frames(
    rows: DataFrame,
    counts: DataFrame | None,
    *,
    report_dir: Path,
    run_name: str,
    expectations_dir: Path | None = None,
) -> RowCheckResult:
    """Run the change suites on prepared frames and render Data Docs into ``report_dir``."""
    import cdcgen.changes.row_expectations  # noqa: F401  (registers the expectation types)
    from cdcgen.changes.report import write_checks_page
    from cdcgen.validation.gx_runner import run_suites

    suites = load_change_suites(expectations_dir)
    skipped = []
    frames = {ROWS_BATCH: rows}
    if counts is None:
        skipped = [
            f"{s.name}: source counts not requested" for s in suites if s.batch != ROWS_BATCH
        ]
        suites = [s for s in suites if s.batch == ROWS_BATCH]
    else:
        frames[COUNTS_BATCH] = counts
    rows = rows.cache()
    frames[ROWS_BATCH] = rows
    try:
        raw, index = run_suites(suites, frames, {}, report_dir, run_name)
    finally:
        rows.unpersist()
    checks = []
    for item in raw:
        details = item.result.get("details") or {}
        samples = tuple(
            dict(r) for r in (details.get("unexpected_rows") or [])[:SAMPLES_PER_FAILURE]
        )
        checks.append(
            RowCheck(
                suite=item.suite,
                expectation=item.expectation,
                check=item.check,
                passed=item.passed,
                observed=item.result.get("observed_value"),
                samples=tuple(_plain(s) for s in samples),
                error=item.error,
            )
        )
    passed = all(c.passed for c in checks)
    result = RowCheckResult(
        passed, checks, index, summarize(run_name, checks, skipped, index), skipped
    )
    page = write_checks_page(report_dir, run_name, result)
    return replace(result, page=page, summary=result.summary + f"\n  Checks page: {page}")


def _plain(row: Mapping[str, Any]) -> dict[str, Any]:
    return {k: (v.isoformat() if hasattr(v, "isoformat") else v) for k, v in row.items()}


def row_text(row: Mapping[str, Any]) -> str:
    """One offending row as a person reads it: stream, time, sequence, key first."""
    head = []
    for key, label in (
        ("stream_hex", "stream"),
        ("cdc_time", "cdc$time"),
        ("batch_seq_no", "batch_seq_no"),
        ("base_key", "key"),
    ):
        if key in row:
            head.append(f"{label} {row[key]}")
    shown = {"stream_hex", "cdc_time", "batch_seq_no", "base_key"}
    return ", ".join(head + [f"{k}={v}" for k, v in row.items() if k not in shown])


def summarize(label: str, checks: Sequence[RowCheck], skipped: Sequence[str], index: Path) -> str:
    failures = [c for c in checks if not c.passed]
    verdict = "FAILED" if failures else "passed"
    lines = [f"changes {label}: {verdict}, {len(checks) - len(failures)} of {len(checks)} checks"]
    for check in failures:
        lines.append(f"  FAILED {check.describe()}")
        lines.extend(f"    {row_text(row)}" for row in check.samples[:SUMMARY_ROWS])
        if len(check.samples) > SUMMARY_ROWS:
            lines.append(f"    ... see the checks page for {len(check.samples)} rows")
    if skipped:
        lines.append("  skipped: " + "; ".join(skipped))
    lines.append(f"  Data Docs: {index}")
    return "\n".join(lines)
