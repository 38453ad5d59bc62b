"""The index: every recorded run, newest first, with links to its pages and Data Docs.

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


def render_index(
    records: Sequence[RunRecord],
    problems: Sequence[str] = (),
    replication: Sequence[ReplicationRun] = (),
) -> str:
    """HTML of ``index.html``; ``problems`` lists record files that could not be read."""
    ordered = sorted(records, key=lambda r: r.created_at, reverse=True)
    generations = {generation_page_name(r) for r in records if isinstance(r, GenerationReport)}
    failed = sum(1 for r in records if r.status is RunStatus.FAILED)
    rows = []
    for record in ordered:
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
    body = [
        "<h1>cdcgen runs</h1>",
        cards(
            [
                ("runs", fmt_int(len(records))),
                ("generations", fmt_int(len(generations))),
                ("failed runs", fmt_int(failed)),
            ]
        ),
    ]
    if problems:
        body.append("<h2>Unreadable records</h2><ul>")
        body += [f"<li>{esc(p)}</li>" for p in problems]
        body.append("</ul>")
    if replication:
        body.append(f"<h2>Replication</h2><p>{_link(REPLICATION, 'Replication')}: ")
        body.append("each sink table's consistency point, lag and rejected changes.</p>")
        body.append(sinks_table(runs_per_sink(replication), REPLICATION))
    body.append("<h2>Every run</h2>")
    body.append(
        table(
            ("recorded at", "what", "detail", "status", "expectations", "run", "pages"),
            rows,
            numeric=(4,),
        )
        if rows
        else '<p class="muted">No run has been recorded yet.</p>'
    )
    return page("cdcgen runs", "".join(body))
