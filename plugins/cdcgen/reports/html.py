"""Page skeleton and small HTML helpers shared by the report pages.

One inline stylesheet, no scripts, no external fonts or images: a page must look
the same opened from disk (``file://``), from the Airflow API server's plugin
mount, or in a CI screenshot with no network.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime
from html import escape

from cdcgen.core.time import naive_as_utc
from cdcgen.reports.records import ExpectationOutcome, RunStatus

STYLE = """
:root { --ok:#1a7f37; --bad:#cf222e; --run:#9a6700; --ink:#1f2328; --muted:#59636e;
        --line:#d1d9e0; --bg:#f6f8fa; }
* { box-sizing: border-box; }
body { font: 14px/1.45 -apple-system, "Segoe UI", Helvetica, Arial, sans-serif;
       color: var(--ink); margin: 0; background: #fff; }
header { background: #0d1117; color: #fff; padding: 12px 24px; }
header a { color: #9ecbff; margin-right: 16px; text-decoration: none; }
header .brand { font-weight: 600; margin-right: 24px; color: #fff; }
main { padding: 16px 24px 40px; max-width: 1280px; }
h1 { font-size: 22px; margin: 8px 0 4px; }
h2 { font-size: 17px; margin: 28px 0 8px; border-bottom: 1px solid var(--line);
     padding-bottom: 4px; }
.muted, .small { color: var(--muted); }
.small { font-size: 11px; }
.big { font-size: 28px; font-weight: 600; fill: var(--ink); }
.chart-title { font-size: 13px; font-weight: 600; fill: var(--ink); }
svg text.muted { fill: var(--muted); font-size: 12px; }
svg text.small { fill: var(--muted); font-size: 10px; }
.cards { display: flex; flex-wrap: wrap; gap: 12px; margin: 12px 0; }
.card { border: 1px solid var(--line); border-radius: 8px; padding: 10px 16px; min-width: 130px;
        background: var(--bg); }
.card .value { font-size: 24px; font-weight: 600; }
.card .label { color: var(--muted); font-size: 12px; text-transform: uppercase; }
table { border-collapse: collapse; margin: 8px 0; min-width: 480px; }
th, td { border: 1px solid var(--line); padding: 5px 10px; text-align: left;
         vertical-align: top; }
th { background: var(--bg); }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
.badge { display: inline-block; border-radius: 10px; padding: 1px 9px; font-size: 12px;
         font-weight: 600; color: #fff; }
.badge.pass, .badge.success, .badge.ok { background: var(--ok); }
.badge.fail, .badge.failed, .badge.rejected { background: var(--bad); }
.badge.running { background: var(--run); }
.figures { display: flex; flex-wrap: wrap; gap: 24px; align-items: flex-start; }
figure { margin: 0; }
figcaption { color: var(--muted); font-size: 12px; max-width: 520px; }
.legend span { display: inline-block; margin-right: 14px; }
.swatch { display: inline-block; width: 12px; height: 12px; border-radius: 2px;
          margin-right: 4px; vertical-align: -1px; }
code { font: 12px ui-monospace, SFMono-Regular, Menlo, monospace; }
"""


def esc(text: object) -> str:
    return escape(str(text), quote=True)


def fmt_time(value: datetime | None) -> str:
    if value is None:
        return "—"
    return naive_as_utc(value).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3] + "Z"


def fmt_int(value: int) -> str:
    return f"{value:,}"


def fmt_seconds(value: float | None) -> str:
    if value is None:
        return "—"
    if value < 120:
        return f"{value:.1f} s"
    if value < 7200:
        return f"{value / 60:.1f} min"
    return f"{value / 3600:.1f} h"


def badge(status: RunStatus | str) -> str:
    text = str(status)
    return f'<span class="badge {esc(text)}">{esc(text)}</span>'


def pass_badge(passed: bool) -> str:
    return (
        '<span class="badge pass">pass</span>'
        if passed
        else ('<span class="badge fail">fail</span>')
    )


def cards(items: Iterable[tuple[str, str]]) -> str:
    """Big-number cards: (label, already formatted value)."""
    body = "".join(
        f'<div class="card"><div class="value">{esc(value)}</div>'
        f'<div class="label">{esc(label)}</div></div>'
        for label, value in items
    )
    return f'<div class="cards">{body}</div>'


def table(
    headers: Sequence[str], rows: Iterable[Sequence[str]], numeric: Sequence[int] = ()
) -> str:
    """A table whose cells are *already-escaped* HTML (callers escape text with :func:`esc`)."""
    head = "".join(f"<th>{esc(h)}</th>" for h in headers)
    body = []
    for row in rows:
        cells = "".join(
            f'<td class="num">{cell}</td>' if i in numeric else f"<td>{cell}</td>"
            for i, cell in enumerate(row)
        )
        body.append(f"<tr>{cells}</tr>")
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"


def key_values(items: Iterable[tuple[str, str]]) -> str:
    """A two-column table of labels and *already-escaped* values (a run's metadata)."""
    rows = "".join(f"<tr><th>{esc(k)}</th><td>{v}</td></tr>" for k, v in items)
    return f'<table class="meta"><tbody>{rows}</tbody></table>'


def expectations_table(outcomes: Sequence[ExpectationOutcome]) -> str:
    if not outcomes:
        return '<p class="muted">No expectations were recorded for this run.</p>'
    passed = sum(1 for o in outcomes if o.passed)
    with_column = any(o.column for o in outcomes)
    rows = [
        (
            pass_badge(o.passed),
            f"<code>{esc(o.name)}</code>",
            *((esc(o.column or ""),) if with_column else ()),
            esc(o.details),
        )
        for o in outcomes
    ]
    summary = (
        f'<p class="expectation-summary"><strong>{passed} of {len(outcomes)}</strong> '
        "expectations passed.</p>"
    )
    headers = ("result", "expectation", *(("column",) if with_column else ()), "details")
    return summary + table(headers, rows)


def page(title: str, body: str, *, root: str = "") -> str:
    """A whole HTML document; ``root`` is the relative path back to the site's top."""
    nav = (
        f'<a class="brand" href="{root}index.html">cdcgen reports</a>'
        f'<a href="{root}index.html">All runs</a>'
        f'<a href="{root}changes.html">Changes</a>'
        f'<a href="{root}replication.html">Replication</a>'
    )
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{esc(title)}</title><style>{STYLE}</style></head>"
        f"<body><header>{nav}</header><main>{body}</main></body></html>\n"
    )
