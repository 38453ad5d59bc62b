"""The row checks page of a changes run: the verdicts, then each failed check's
offending rows as a table, one column per field.

GX Data Docs hold the same rows, but as JSON inside each expectation's result; a person
hunting a misrouted row wants its stream, ``cdc$time``, ``batch_seq_no`` and base key
side by side. The page sits next to the run's Data Docs (``<run dir>/checks.html``) and
the run's record on the report site links to it.

The page renders any check shaped like :class:`CheckRows` (the validation's
:class:`~cdcgen.validation.results.CheckOutcome` is one), so the report site keeps
depending on nothing of the product but its core, and validation can write the page.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Protocol

from cdcgen.adapters.files import write_atomic
from cdcgen.reports.html import esc, expectations_table, page, table
from cdcgen.reports.records import ExpectationOutcome

CHECKS_PAGE = "checks.html"
#: Under the report directory, each changes run's checks: ``changes/<table>/<run>/``.
CHECKS_DIR = "changes"
#: Offending rows listed per failed check (Data Docs keep what GX returned).
ROWS_SHOWN = 50


class CheckRows(Protocol):
    """What the page shows of one check: its verdict and its offending rows."""

    @property
    def check(self) -> str: ...

    @property
    def passed(self) -> bool: ...

    @property
    def observed(self) -> object: ...

    @property
    def samples(self) -> Sequence[Mapping[str, object]]: ...

    @property
    def error(self) -> str | None: ...

    def describe(self) -> str: ...


def checks_page_path(run_dir: Path) -> Path:
    """Where :func:`write_checks_page` puts the page of the run whose Data Docs are in
    ``run_dir``."""
    return Path(run_dir) / CHECKS_PAGE


def render_checks_page(
    label: str, checks: Sequence[CheckRows], skipped: Sequence[str], data_docs: str
) -> str:
    """One run's row checks: verdicts, then every failed check's offending rows by name."""
    outcomes = [ExpectationOutcome(c.check, c.passed, c.describe()) for c in checks]
    body = [
        f"<h1>Row checks: {esc(label)}</h1>",
        f'<p><a href="{esc(data_docs)}">Great Expectations Data Docs</a></p>',
        expectations_table(outcomes),
    ]
    failures = [c for c in checks if not c.passed]
    if failures:
        body.append("<h2>Offending rows</h2>")
        body += [offending_rows(c) for c in failures]
    if skipped:
        body.append("<h2>Skipped</h2><ul>")
        body += [f"<li>{esc(s)}</li>" for s in skipped]
        body.append("</ul>")
    return page(f"Row checks {label}", "\n".join(body), root="")


def write_checks_page(
    run_dir: Path,
    label: str,
    checks: Sequence[CheckRows],
    skipped: Sequence[str],
    report_index: Path,
) -> Path:
    """``<run_dir>/checks.html``, linking the run's Data Docs at ``report_index``."""
    path = checks_page_path(run_dir)
    docs = os.path.relpath(report_index, run_dir)
    write_atomic(path, render_checks_page(label, checks, skipped, docs))
    return path


def offending_rows(check: CheckRows) -> str:
    """A failed check's heading and its first :data:`ROWS_SHOWN` rows, one column per
    field (the union of the rows' fields, in first-seen order)."""
    columns: list[str] = []
    for row in check.samples[:ROWS_SHOWN]:
        columns += [c for c in row if c not in columns]
    rows = [[f"<code>{esc(row.get(c, ''))}</code>" for c in columns] for row in check.samples]
    shown = min(len(check.samples), ROWS_SHOWN)
    head = (
        f"<h3>{esc(check.check)}: {esc(check.observed)} offending row(s)"
        f"{'' if shown == check.observed else f', first {shown} shown'}</h3>"
    )
    if check.error:
        return head + f"<p>could not run: <code>{esc(check.error)}</code></p>"
    return head + table(columns, rows[:ROWS_SHOWN])
