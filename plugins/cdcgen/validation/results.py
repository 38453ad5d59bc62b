"""The one result model of a validation: each check's verdict and its offending rows.

Both gates produce it: the generation suites, before a generation is published
(:mod:`.generation_suite`), and the change-row suites, after a changes run wrote its
windows (:mod:`.change_rows`). One model means a verdict reads the same everywhere: in
a task log (:func:`summary_text`), in a run's JSON, on the report site. Every failure
names its rows by the columns a person searches for first (:func:`row_text`): the
stream, then where in the generation or the log the row sits.

Plain data only (no GX, no Spark), so DAG-facing code and the report site can use it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

#: Offending rows per failed check printed in a summary (the reports show more).
SUMMARY_ROWS = 5

#: The columns that identify an offending row, in the order a person reads them, with
#: the word shown before each value. Generation rows carry the first group (stream,
#: entry, shard, token), change rows the second (stream, ``cdc$time``, sequence, key).
IDENTIFYING_COLUMNS: tuple[tuple[str, str], ...] = (
    ("stream_id_hex", "stream"),
    ("entry_index", "entry"),
    ("shard", "shard"),
    ("stream_token", "token"),
    ("stream_hex", "stream"),
    ("cdc_time", "cdc$time"),
    ("batch_seq_no", "batch_seq_no"),
    ("base_key", "key"),
)

#: One offending row as GX returned it: column name to a JSON-friendly value.
Row = Mapping[str, object]


@dataclass(frozen=True)
class CheckOutcome:
    """One expectation's verdict with its offending rows.

    ``samples`` holds the rows GX returned (at most its ``MAX_RESULT_RECORDS``, 200,
    or fewer when the caller keeps fewer); ``observed`` the full count when
    ``counts_rows`` (every custom rule is a query for offending rows), else the value a
    built-in expectation observed (a row count, for example).
    """

    suite: str
    expectation: str
    check: str
    passed: bool
    observed: object = None
    samples: tuple[Row, ...] = ()
    error: str | None = None
    counts_rows: bool = True

    def describe(self) -> str:
        """One line: the check's human name, where it is defined, and what was wrong."""
        where = f"{self.suite}.{self.expectation}"
        if self.error:
            return f"{self.check} [{where}]: could not run: {self.error}"
        if self.counts_rows:
            return f"{self.check} [{where}]: {self.observed} offending row(s)"
        return f"{self.check} [{where}]: observed {self.observed}"


@dataclass(frozen=True)
class ValidationResult:
    """Every check of one validation run, and where a person reads the details.

    ``report_index`` is the Data Docs index GX built for the run; ``page`` the row
    checks page of a changes run (offending rows by column, :mod:`cdcgen.reports`), if
    one was written. ``skipped`` names the checks that could not run for a missing
    input: a skip is reported, never silent.
    """

    passed: bool
    checks: list[CheckOutcome]
    report_index: Path
    summary: str
    skipped: list[str] = field(default_factory=list)
    page: Path | None = None
    ring: str = ""  # generations: which ring the checks used, or that none was known
    ring_known: bool = False  # whether the checks against the ring ran

    @property
    def failures(self) -> list[CheckOutcome]:
        """The checks that did not pass (or could not run), in suite order."""
        return [check for check in self.checks if not check.passed]

    def raise_if_failed(self, error: Callable[[ValidationResult], Exception]) -> ValidationResult:
        """``self`` if every check passed; else raise ``error`` (which gate failed: a
        :class:`~cdcgen.validation.errors.ValidationFailed` class)."""
        if not self.passed:
            raise error(self)
        return self


def summary_text(
    subject: str,
    checks: Sequence[CheckOutcome],
    skipped: Sequence[str],
    report_index: Path,
    *,
    page: Path | None = None,
) -> str:
    """The lines a person reads in a task log: the verdict, each failed check with its
    first offending rows, the skipped checks, and where the full reports are.

    ``subject`` says what was validated (``"generation 2026-11-22T10:00:00.000Z (id)"``,
    ``"changes shop.orders run-1"``).
    """
    failures = [check for check in checks if not check.passed]
    verdict = "FAILED" if failures else "passed"
    passed = len(checks) - len(failures)
    lines = [f"{subject}: {verdict}, {passed} of {len(checks)} checks passed"]
    for check in failures:
        lines.append(f"  FAILED {check.describe()}")
        lines.extend(f"    {row_text(row)}" for row in check.samples[:SUMMARY_ROWS])
        if len(check.samples) > SUMMARY_ROWS:
            where = "checks page" if page is not None else "Data Docs"
            more = len(check.samples) - SUMMARY_ROWS
            lines.append(f"    ... {more} more row(s) on the {where}")
    if skipped:
        lines.append("  skipped: " + "; ".join(skipped))
    lines.append(f"  Data Docs: {report_index}")
    if page is not None:
        lines.append(f"  Checks page: {page}")
    return "\n".join(lines)


def row_text(row: Row) -> str:
    """One offending row as a person reads it: the identifying columns first, by name
    (:data:`IDENTIFYING_COLUMNS`), then every other column as ``name=value``."""
    head = [f"{label} {row[column]}" for column, label in IDENTIFYING_COLUMNS if column in row]
    shown = {column for column, _ in IDENTIFYING_COLUMNS}
    rest = [f"{key}={value}" for key, value in row.items() if key not in shown]
    return ", ".join(head + rest)
