"""The index: every recorded run, newest first, with links to its pages and Data Docs.

A page lists :data:`RUNS_PER_PAGE` runs (``index.html`` the newest, then
``index-2.html``, ...), so no page grows with the history.

Replication runs keep records of their own (:mod:`.replication_records`); the index
shows where each sink table stands and links to the replication page for the rest.
"""

from __future__ import annotations

from collections.abc import Sequence

from cdcgen.reports.generation_page import data_docs_href
from cdcgen.reports.html import badge, cards, esc, fmt_int, fmt_time, page, table
from cdcgen.reports.records import (
    ChangesReport,
    GenerationReport,
    RunRecord,
    RunStatus,
    generation_page_name,
)
from cdcgen.reports.replication_page import REPLICATION, runs_per_sink, sinks_table
from cdcgen.reports.replication_records import ReplicationRun


def _link(href: str, text: str) -> str:
    return f'<a href="{esc(href)}">{esc(text)}</a>'


#: Runs listed on one index page.
RUNS_PER_PAGE = 100


def index_page_name(number: int) -> str:
    """``index.html`` for the first (newest) page, ``index-<n>.html`` for the others."""
    return "index.html" if number == 1 else f"index-{number}.html"


def index_page_number(name: str) -> int | None:
    """The number of the index page named ``name`` (the inverse of
    :func:`index_page_name`), or None if no index page has that name."""
    if name == "index.html":
        return 1
    number = name.removeprefix("index-").removesuffix(".html")
    if name != f"index-{number}.html" or not number.isdigit() or number.startswith("0"):
        return None
    return int(number) if int(number) > 1 else None


def render_index(
    records: Sequence[RunRecord],
    problems: Sequence[str] = (),
    replication: Sequence[ReplicationRun] = (),
) -> str:
    """HTML of ``index.html``; ``problems`` lists record files that could not be read."""
    return render_index_pages(records, problems, replication)[0]


def render_index_pages(
    records: Sequence[RunRecord],
    problems: Sequence[str] = (),
    replication: Sequence[ReplicationRun] = (),
    per_page: int = RUNS_PER_PAGE,
) -> list[str]:
    """HTML of every index page, the first one (at least) even with no runs."""
    ordered = sorted(records, key=lambda r: r.created_at, reverse=True)
    chunks = [ordered[i : i + per_page] for i in range(0, len(ordered), per_page)] or [[]]
    totals = _totals(records)  # once: every page shows them
    return [
        _render_page(totals, chunk, number, len(chunks), problems, replication)
        for number, chunk in enumerate(chunks, start=1)
    ]


def _totals(records: Sequence[RunRecord]) -> str:
    """The cards over every run kept, on top of each index page."""
    generations = {generation_page_name(r) for r in records if isinstance(r, GenerationReport)}
    failed = sum(1 for r in records if r.status is RunStatus.FAILED)
    return cards(
        [
            ("runs", fmt_int(len(records))),
            ("generations", fmt_int(len(generations))),
            ("failed runs", fmt_int(failed)),
        ]
    )


def _pager(number: int, pages: int) -> str:
    if pages == 1:
        return ""
    links = [
        _link(index_page_name(n), str(n)) if n != number else f"<b>{n}</b>"
        for n in range(1, pages + 1)
    ]
    newer = _link(index_page_name(number - 1), "← newer") if number > 1 else ""
    older = _link(index_page_name(number + 1), "older →") if number < pages else ""
    return f'<p class="pager">{newer} {" ".join(links)} {older}</p>'


def _render_page(
    totals: str,
    shown: Sequence[RunRecord],
    number: int,
    pages: int,
    problems: Sequence[str],
    replication: Sequence[ReplicationRun],
) -> str:
    """One index page: the ``totals`` over every run, the rows of ``shown``."""
    rows = []
    for record in shown:
        docs = data_docs_href(record.data_docs_path, "")
        docs_link = _link(docs, "Data Docs") if docs else "—"
        expectations = (
            f"{sum(1 for e in record.expectations if e.passed)}/{len(record.expectations)}"
        )
        if isinstance(record, GenerationReport):
            what = _link(
                f"generations/{generation_page_name(record)}",
                f"generation {fmt_time(record.generation_time)}",
            )
            detail = f"<code>{esc(record.generation_id)}</code>" + (
                " · published" if record.published else " · not published"
            )
            summary = _link(f"generations/{generation_page_name(record)}", "summary")
        else:
            assert isinstance(record, ChangesReport)
            what = _link("changes.html", "changes")
            detail = esc(
                f"{fmt_time(record.window_start)} → {fmt_time(record.window_end)}, "
                f"{fmt_int(record.total_rows)} rows"
            )
            summary = _link("changes.html", "changes")
        rows.append(
            (
                esc(fmt_time(record.created_at)),
                what,
                detail,
                badge(record.status),
                expectations,
                esc(record.run_id or "—"),
                f"{summary} · {docs_link}",
            )
        )
    body = ["<h1>cdcgen runs</h1>", totals]
    if problems and number == 1:
        body.append("<h2>Unreadable records</h2><ul>")
        body += [f"<li>{esc(p)}</li>" for p in problems]
        body.append("</ul>")
    if replication and number == 1:
        body.append(f"<h2>Replication</h2><p>{_link(REPLICATION, 'Replication')}: ")
        body.append("each sink table's consistency point, lag and rejected changes.</p>")
        body.append(sinks_table(runs_per_sink(replication), REPLICATION))
    body.append("<h2>Every run</h2>" if pages == 1 else f"<h2>Every run: page {number}</h2>")
    pager = _pager(number, pages)
    body.append(pager)
    body.append(
        table(
            ("recorded at", "what", "detail", "status", "expectations", "run", "pages"),
            rows,
            numeric=(4,),
        )
        if rows
        else '<p class="muted">No run has been recorded yet.</p>'
    )
    body.append(pager)
    return page("cdcgen runs", "".join(body))
