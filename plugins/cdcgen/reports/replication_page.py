"""The replication page: per sink table, how far it is consistent and what could not be applied.

A sink is only as useful as the timestamp up to which every stream of its source has
been applied, so that timestamp and the lag behind it lead each section; the history
(lag run after run, changes applied per run) shows whether it keeps up, and every
change the sink refused is listed by name, since a refused change is the one thing a
replica cannot recover from by running again.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from datetime import datetime
from urllib.parse import quote

from cdcgen.reports import svg
from cdcgen.reports.html import (
    badge,
    cards,
    esc,
    fmt_int,
    fmt_seconds,
    fmt_time,
    key_values,
    page,
    table,
)
from cdcgen.reports.replication_records import ReplicationRun

#: Runs each sink's table lists, newest first (the charts show every run).
RUNS_SHOWN = 50
REPLICATION = "replication.html"
#: Two charts side by side within the page's width.
CHART_WIDTH = 560


def runs_per_sink(runs: Sequence[ReplicationRun]) -> dict[str, list[ReplicationRun]]:
    """Each sink table's runs, oldest first."""
    grouped: dict[str, list[ReplicationRun]] = defaultdict(list)
    for run in sorted(runs, key=lambda r: (r.ended_at, r.run_id)):
        grouped[run.sink_table].append(run)
    return dict(sorted(grouped.items()))


def anchor(sink: str) -> str:
    """The id of a sink's section: stable across builds, so links to it keep working."""
    return "sink-" + quote(sink, safe="")


def _stamp(text: str) -> str:
    """A recorded ISO time as the pages show times; any other text as it is."""
    try:
        return fmt_time(datetime.fromisoformat(text))
    except ValueError:
        return text


def _last_bootstrap(history: Sequence[ReplicationRun]) -> ReplicationRun | None:
    return next((r for r in reversed(history) if r.is_bootstrap), None)


def sinks_table(per_sink: dict[str, list[ReplicationRun]], href: str = "") -> str:
    """One row per sink table: what it is consistent up to, as of its last run."""
    rows = []
    for sink, history in per_sink.items():
        last = history[-1]
        rejected = sum(r.rejected_count for r in history)
        rows.append(
            (
                f'<a href="{esc(href)}#{esc(anchor(sink))}"><code>{esc(sink)}</code></a>',
                f"<code>{esc(last.source_table)}</code>",
                esc(fmt_time(last.consistent_until)),
                esc(fmt_seconds(last.lag_seconds)),
                esc(fmt_time(last.ended_at)),
                fmt_int(rejected),
                badge(last.status),
            )
        )
    headers = ("sink table", "source table", "consistent until", "lag", "as of")
    return table((*headers, "changes not applied", "last run"), rows, numeric=(5,))


def _summary(history: Sequence[ReplicationRun]) -> str:
    last, boot = history[-1], _last_bootstrap(history)
    if boot is not None:
        copied = f"{fmt_int(boot.copied_rows or 0)} rows copied"
        truncated = ", sink emptied first" if boot.truncated else ""
        bootstrap = f"{fmt_time(boot.bootstrapped_at)} ({copied}{truncated}; run {boot.run_id})"
    else:  # bootstrapped before the records kept here began
        bootstrap = f"{fmt_time(last.bootstrapped_at)} (no bootstrap record)"
    return key_values(
        [
            ("consistent until", esc(fmt_time(last.consistent_until))),
            ("lag", esc(f"{fmt_seconds(last.lag_seconds)} (as of {fmt_time(last.ended_at)})")),
            ("last bootstrap", esc(bootstrap)),
            ("last run", f"{esc(last.run_id or '—')} {badge(last.status)}"),
        ]
    )


def _runs_table(history: Sequence[ReplicationRun]) -> str:
    newest = list(reversed(history))[:RUNS_SHOWN]
    rows = [
        (
            esc(fmt_time(r.ended_at)),
            esc(r.kind),
            esc(r.run_id or "—"),
            esc(
                f"bootstrap at {fmt_time(r.bootstrapped_at)}"
                if r.is_bootstrap
                else f"{fmt_time(r.applied_from)} → {fmt_time(r.consistent_until)}"
            ),
            fmt_int(r.copied_rows if r.is_bootstrap and r.copied_rows else r.applied_log_rows),
            fmt_int(r.applied_batches),
            esc("—" if r.lake_version is None else r.lake_version),
            fmt_int(r.rejected_count),
            badge(r.status),
        )
        for r in newest
    ]
    headers = ("ended at", "kind", "run", "applied", "rows applied or copied", "batches")
    shown = (
        f'<p class="muted">The latest {RUNS_SHOWN} of {fmt_int(len(history))} runs.</p>'
        if len(history) > RUNS_SHOWN
        else ""
    )
    return shown + table((*headers, "lake version", "rejected", "status"), rows, (4, 5, 7))


def _rejected_table(history: Sequence[ReplicationRun]) -> str:
    rows = [
        (
            esc(_stamp(change.write_time)),
            f"<code>{esc(change.cdc_time)}</code>",
            f"<code>{esc(change.stream_id)}</code>",
            esc(change.reason),
            esc(run.run_id or "—"),
        )
        for run in reversed(history)
        for change in run.rejected
    ]
    if not rows:
        return '<p class="muted">None: every change read from the lake was applied.</p>'
    headers = ("write time", "cdc$time", "stream id", "reason", "run")
    return f"<p>{fmt_int(len(rows))} change(s) not applied.</p>" + table(headers, rows)


def _sink_section(sink: str, history: Sequence[ReplicationRun]) -> list[str]:
    source = history[-1].source_table
    lag = [(r.ended_at, r.lag_seconds) for r in history if r.lag_seconds is not None]
    applied = [(r.ended_at, float(r.applied_log_rows)) for r in history if not r.is_bootstrap]
    batches = [(r.ended_at, float(r.applied_batches)) for r in history if not r.is_bootstrap]
    last = history[-1]
    refused = any(r.rejected for r in history)
    but = " except the changes not applied, listed below" if refused else ""
    return [
        f'<h2 id="{esc(anchor(sink))}">{esc(sink)} ← {esc(source)}</h2>',
        f"<p>Every stream of <code>{esc(source)}</code> is applied to <code>{esc(sink)}</code> "
        f"up to <strong>{esc(fmt_time(last.consistent_until))}</strong>{but}.</p>",
        _summary(history),
        '<div class="figures">',
        svg.line_chart_svg({sink: lag}, "Lag, run after run", "lag (s)", "run end", CHART_WIDTH),
        svg.line_chart_svg(
            {"log rows": applied, "batches": batches},
            "Changes applied per run",
            "applied",
            "run end",
            CHART_WIDTH,
        ),
        "</div>",
        "<h3>Runs</h3>",
        _runs_table(history),
        "<h3>Changes not applied</h3>",
        _rejected_table(history),
    ]


def render_replication_page(
    runs: Sequence[ReplicationRun], problems: Sequence[str] = (), root: str = ""
) -> str:
    """HTML of ``replication.html``; ``problems`` names the records that could not be read."""
    per_sink = runs_per_sink(runs)
    worst = max(
        (h[-1].lag_seconds for h in per_sink.values() if h[-1].lag_seconds is not None),
        default=None,
    )
    body = [
        "<h1>Replication</h1>",
        cards(
            [
                ("sink tables", fmt_int(len(per_sink))),
                ("runs", fmt_int(len(runs))),
                ("log rows applied", fmt_int(sum(r.applied_log_rows for r in runs))),
                ("changes not applied", fmt_int(sum(r.rejected_count for r in runs))),
                ("worst lag", fmt_seconds(worst)),
            ]
        ),
    ]
    if problems:
        body += ["<h2>Unreadable records</h2><ul>", *(f"<li>{esc(p)}</li>" for p in problems)]
        body.append("</ul>")
    if not per_sink:
        body.append(
            '<p class="muted">No replication has run yet: <code>cdcgen replication '
            "bootstrap</code> then <code>cdcgen replication apply</code> record their runs "
            "here.</p>"
        )
        return page("Replication", "".join(body), root=root)
    body += ["<h2>Sink tables</h2>", sinks_table(per_sink)]
    for sink, history in per_sink.items():
        body += _sink_section(sink, history)
    return page("Replication", "".join(body), root=root)
