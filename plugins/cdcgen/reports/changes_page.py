"""The changes page: lag and watermark per table, rows per generation over time.

Aggregates every changes-run record: the latest state of each table, how its lag
moved run after run, and how many rows each generation contributed per table.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from datetime import datetime

from cdcgen.reports import svg
from cdcgen.reports.html import badge, cards, esc, fmt_int, fmt_seconds, fmt_time, page, table
from cdcgen.reports.records import ChangesReport, TableLag


def latest_per_table(records: Sequence[ChangesReport]) -> dict[str, tuple[TableLag, ChangesReport]]:
    """Each table's most recent state (records sorted oldest first win last)."""
    latest: dict[str, tuple[TableLag, ChangesReport]] = {}
    for record in sorted(records, key=lambda r: r.created_at):
        for lag in record.tables:
            latest[lag.qualified_name] = (lag, record)
    return latest


def rows_per_generation(
    records: Sequence[ChangesReport],
) -> dict[str, list[tuple[datetime, float]]]:
    """Per table: (generation time, rows) summed over every run that read it."""
    sums: dict[str, dict[datetime, int]] = defaultdict(lambda: defaultdict(int))
    for record in records:
        for item in record.rows_per_generation:
            sums[item.table][item.generation_time] += item.rows
    return {t: sorted((g, float(n)) for g, n in by_gen.items()) for t, by_gen in sums.items()}


def lag_over_runs(records: Sequence[ChangesReport]) -> dict[str, list[tuple[datetime, float]]]:
    series: dict[str, list[tuple[datetime, float]]] = defaultdict(list)
    for record in records:
        for lag in record.tables:
            if lag.lag_seconds is not None:
                series[lag.qualified_name].append((record.created_at, lag.lag_seconds))
    return dict(series)


def lake_versions(record: ChangesReport) -> str:
    """The Delta table versions a run committed, per table (``—``: none)."""
    written = [(t.qualified_name, t.lake_versions) for t in record.tables if t.lake_versions]
    if not written:
        return "—"
    if len(written) == 1:
        return ", ".join(str(v) for v in written[0][1])
    return "; ".join(f"{name}: {', '.join(str(v) for v in v_)}" for name, v_ in written)


#: Runs whose notes the page lists, newest first.
NOTED_RUNS = 20


def render_changes_page(records: Sequence[ChangesReport], root: str = "") -> str:
    latest = latest_per_table(records)
    total_rows = sum(r.total_rows for r in records)
    worst = max(
        (lag.lag_seconds for lag, _ in latest.values() if lag.lag_seconds is not None),
        default=None,
    )
    body = [
        "<h1>Changes</h1>",
        cards(
            [
                ("changes runs", fmt_int(len(records))),
                ("tables", fmt_int(len(latest))),
                ("rows read", fmt_int(total_rows)),
                ("worst lag", fmt_seconds(worst)),
            ]
        ),
        "<h2>Lag and watermark per table</h2>",
    ]
    if latest:
        rows = [
            (
                f"<code>{esc(name)}</code>",
                esc(fmt_time(lag.watermark)),
                esc(fmt_seconds(lag.lag_seconds)),
                fmt_int(lag.rows),
                esc(fmt_time(record.created_at)),
                badge(record.status),
            )
            for name, (lag, record) in sorted(latest.items())
        ]
        body.append(
            table(
                ("table", "watermark", "lag", "rows (last run)", "as of", "run status"),
                rows,
                numeric=(3,),
            )
        )
        body.append('<div class="figures">')
        body.append(
            svg.bar_chart_svg(
                [(name, lag.lag_seconds or 0.0) for name, (lag, _) in sorted(latest.items())],
                "Lag per table (seconds behind now)",
                unit=" s",
            )
        )
        body.append(
            svg.line_chart_svg(
                lag_over_runs(records), "Lag per table, run after run", "lag (s)", "run time"
            )
        )
        body.append("</div>")
    else:
        body.append('<p class="muted">No changes run has been recorded yet.</p>')
    body += [
        "<h2>Rows per generation over time</h2>",
        svg.line_chart_svg(rows_per_generation(records), "Rows per generation", "rows"),
        "<h2>Runs</h2>",
    ]
    run_rows = [
        (
            esc(fmt_time(r.created_at)),
            badge(r.status),
            esc(r.run_id or "—"),
            esc(f"{fmt_time(r.window_start)} → {fmt_time(r.window_end)}"),
            fmt_int(r.total_rows),
            esc(lake_versions(r)),
            f"{sum(1 for e in r.expectations if e.passed)}/{len(r.expectations)}",
        )
        for r in sorted(records, key=lambda r: r.created_at, reverse=True)
    ]
    headers = ("recorded at", "status", "run", "window", "rows", "lake versions", "expectations")
    body.append(table(headers, run_rows, (4,)) if run_rows else '<p class="muted">None.</p>')
    noted = [r for r in sorted(records, key=lambda r: r.created_at, reverse=True) if r.notes]
    if noted:  # what a run wants a person to know: quarantined rows, pending windows
        items = [
            f"<li>{esc(r.run_id or '—')}: {esc(n)}</li>"
            for r in noted[:NOTED_RUNS]
            for n in r.notes
        ]
        body += ["<h2>Notes of the latest runs</h2><ul>", *items, "</ul>"]
    return page("Changes", "".join(body), root=root)
