"""Inline SVG charts: the ring picture, histograms, bar and line charts.

Hand-written SVG rather than a plotting library: the pages must open from disk
or from the Airflow API server with no network, no JavaScript and no extra
dependency, and a chart here is a few hundred elements.  Every function returns
one ``<svg>`` element as a string; every label goes through :func:`esc`.
Hovering an element shows its ``<title>`` (the browser's own tooltip).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from html import escape

from cdcgen.reports.records import RingEntry

TOKEN_SPACE = 1 << 64
_HALF = 1 << 63

# Okabe-Ito: distinguishable by colour-blind readers; cycled with a hue walk past 8.
_PALETTE = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#666666")
_SHARD_PALETTE = ("#1b1b1b", "#7a3b9a", "#b8860b", "#2e8b57", "#c0392b", "#1f618d", "#7f8c8d")

#: Beyond this many stream dots the ring draws none (the page would get heavy).
MAX_STREAM_DOTS = 6000


def esc(text: object) -> str:
    return escape(str(text), quote=True)


def colour(index: int) -> str:
    """The ``index``-th categorical colour."""
    if index < len(_PALETTE):
        return _PALETTE[index]
    hue = (index * 137.508) % 360  # golden-angle walk: neighbours stay apart
    return f"hsl({hue:.0f},55%,45%)"


def shard_colour(shard: int) -> str:
    return _SHARD_PALETTE[shard % len(_SHARD_PALETTE)]


def node_colours(nodes: Sequence[str]) -> dict[str, str]:
    """Stable colours: nodes sorted by name get palette entries in order."""
    return {node: colour(i) for i, node in enumerate(sorted(set(nodes)))}


def _fmt(value: float) -> str:
    return f"{value:.2f}".rstrip("0").rstrip(".")


def unbias(token: int) -> int:
    """Signed token to ``[0, 2^64)``: ring order starting at the minimum token."""
    return (token + _HALF) % TOKEN_SPACE


def token_angle(token: int) -> float:
    """Angle in radians, clockwise from 12 o'clock, of a token on the ring."""
    return unbias(token) / TOKEN_SPACE * 2 * math.pi


def range_fraction(start: int, end: int) -> float:
    """Share of the ring covered by ``(start, end]``; a range with ``start == end`` is all of it."""
    width = (unbias(end) - unbias(start)) % TOKEN_SPACE
    return 1.0 if width == 0 else width / TOKEN_SPACE


def _point(cx: float, cy: float, radius: float, angle: float) -> tuple[float, float]:
    return cx + radius * math.sin(angle), cy - radius * math.cos(angle)


def _sector_path(cx: float, cy: float, r_in: float, r_out: float, a0: float, sweep: float) -> str:
    """Annular sector from angle ``a0`` clockwise by ``sweep`` radians (< 2π)."""
    a1 = a0 + sweep
    large = 1 if sweep > math.pi else 0
    x0, y0 = _point(cx, cy, r_out, a0)
    x1, y1 = _point(cx, cy, r_out, a1)
    x2, y2 = _point(cx, cy, r_in, a1)
    x3, y3 = _point(cx, cy, r_in, a0)
    return (
        f"M{_fmt(x0)},{_fmt(y0)} A{_fmt(r_out)},{_fmt(r_out)} 0 {large} 1 {_fmt(x1)},{_fmt(y1)} "
        f"L{_fmt(x2)},{_fmt(y2)} A{_fmt(r_in)},{_fmt(r_in)} 0 {large} 0 {_fmt(x3)},{_fmt(y3)} Z"
    )


def ring_svg(ring: Sequence[RingEntry], colours: Mapping[str, str], size: int = 460) -> str:
    """The generation's ring: one arc per range coloured by owning node, stream dots per shard.

    The outer band shows ranges (``(start, end]`` clockwise from the minimum token
    at 12 o'clock).  Inside it, one thin track per shard index carries a dot at each
    stream's token, so a node's shard count and the streams' placement inside their
    ranges are both visible.  Range ends are ticked on the outside.
    """
    cx = cy = size / 2
    r_out = size / 2 - 14
    r_in = r_out - 34
    parts = [
        f'<svg class="chart ring" xmlns="http://www.w3.org/2000/svg" width="{size}" '
        f'height="{size}" viewBox="0 0 {size} {size}" role="img" '
        f'aria-label="Token ring: {len(ring)} ranges">',
        f"<title>Token ring: {len(ring)} ranges</title>",
        f'<circle cx="{_fmt(cx)}" cy="{_fmt(cy)}" r="{_fmt(r_out)}" fill="none" '
        'stroke="#ccc" stroke-width="1"/>',
    ]
    for index, entry in enumerate(ring):
        fill = colours.get(entry.node, "#999")
        fraction = range_fraction(entry.range_start, entry.range_end)
        label = (
            f"range {index}: ({entry.range_start}, {entry.range_end}] node "
            f"{entry.node or '?'}, {entry.shard_count} stream(s), {fraction * 100:.3f}% of ring"
        )
        if fraction >= 1.0:
            shape = (
                f'<circle cx="{_fmt(cx)}" cy="{_fmt(cy)}" r="{_fmt((r_in + r_out) / 2)}" '
                f'fill="none" stroke="{fill}" stroke-width="{_fmt(r_out - r_in)}">'
            )
            parts.append(f"{shape}<title>{esc(label)}</title></circle>")
            continue
        path = _sector_path(
            cx, cy, r_in, r_out, token_angle(entry.range_start), fraction * 2 * math.pi
        )
        parts.append(
            f'<path class="range" d="{path}" fill="{fill}" stroke="#fff" stroke-width="0.3">'
            f"<title>{esc(label)}</title></path>"
        )
    max_shards = max((e.shard_count for e in ring), default=0)
    dots = sum(len(e.stream_tokens) for e in ring)
    if max_shards and 0 < dots <= MAX_STREAM_DOTS:
        track = min(12.0, (r_in - 40) / max(max_shards, 1))
        for entry in ring:
            for shard, token in enumerate(entry.stream_tokens):
                radius = r_in - 8 - shard * track
                x, y = _point(cx, cy, radius, token_angle(token))
                parts.append(
                    f'<circle class="stream" cx="{_fmt(x)}" cy="{_fmt(y)}" r="2.2" '
                    f'fill="{shard_colour(shard)}"><title>{esc(entry.node or "?")} shard '
                    f"{shard}: stream token {token}</title></circle>"
                )
    for entry in ring if len(ring) <= 64 else ():
        x0, y0 = _point(cx, cy, r_out, token_angle(entry.range_end))
        x1, y1 = _point(cx, cy, r_out + 8, token_angle(entry.range_end))
        parts.append(
            f'<line x1="{_fmt(x0)}" y1="{_fmt(y0)}" x2="{_fmt(x1)}" y2="{_fmt(y1)}" '
            'stroke="#333" stroke-width="1"/>'
        )
    parts.append(
        f'<text x="{_fmt(cx)}" y="{_fmt(cy - 6)}" text-anchor="middle" class="big">'
        f"{len(ring)}</text>"
        f'<text x="{_fmt(cx)}" y="{_fmt(cy + 14)}" text-anchor="middle" class="muted">'
        "ranges</text>"
        f'<text x="{_fmt(cx)}" y="10" text-anchor="middle" class="muted">min token</text>'
    )
    parts.append("</svg>")
    return "".join(parts)


@dataclass(frozen=True)
class Bin:
    label: str
    count: int


def integer_bins(values: Sequence[int]) -> list[Bin]:
    """One bin per distinct integer between min and max (streams per range)."""
    if not values:
        return []
    low, high = min(values), max(values)
    counts = {v: 0 for v in range(low, high + 1)} if high - low <= 64 else {}
    for value in values:
        counts[value] = counts.get(value, 0) + 1
    return [Bin(str(value), counts[value]) for value in sorted(counts)]


def linear_bins(values: Sequence[float], bins: int = 20, unit: str = "") -> list[Bin]:
    """Equal-width bins between min and max (range sizes)."""
    if not values:
        return []
    low, high = min(values), max(values)
    if high == low:
        return [Bin(f"{_fmt(low)}{unit}", len(values))]
    width = (high - low) / bins
    counts = [0] * bins
    for value in values:
        counts[min(int((value - low) / width), bins - 1)] += 1
    return [
        Bin(f"{_fmt(low + i * width)}–{_fmt(low + (i + 1) * width)}{unit}", count)
        for i, count in enumerate(counts)
    ]


def _nice_max(value: float) -> float:
    if value <= 0:
        return 1.0
    exponent = math.floor(math.log10(value))
    base = 10**exponent
    for step in (1, 2, 2.5, 5, 10):
        if value <= step * base:
            return float(step * base)
    return float(10 * base)


def histogram_svg(
    bins: Sequence[Bin], title: str, x_label: str, y_label: str = "ranges", width: int = 520
) -> str:
    """Vertical bars, one per bin, with the count above each non-empty bar."""
    height = 270
    left, right, top, bottom = 48, 12, 28, 68
    plot_w, plot_h = width - left - right, height - top - bottom
    top_value = _nice_max(max((b.count for b in bins), default=0))
    parts = [
        f'<svg class="chart histogram" xmlns="http://www.w3.org/2000/svg" width="{width}" '
        f'height="{height}" viewBox="0 0 {width} {height}" role="img" aria-label="{esc(title)}">',
        f"<title>{esc(title)}</title>",
        f'<text x="{left}" y="16" class="chart-title">{esc(title)}</text>',
        _axes(left, top, plot_w, plot_h, top_value, y_label),
    ]
    if bins:
        slot = plot_w / len(bins)
        bar_w = max(1.0, slot * 0.8)
        show_every = max(1, math.ceil(len(bins) / 7))
        for i, item in enumerate(bins):
            bar_h = plot_h * item.count / top_value
            x = left + i * slot + (slot - bar_w) / 2
            y = top + plot_h - bar_h
            parts.append(
                f'<rect class="bar" x="{_fmt(x)}" y="{_fmt(y)}" width="{_fmt(bar_w)}" '
                f'height="{_fmt(bar_h)}" fill="{colour(0)}"><title>{esc(item.label)}: '
                f"{item.count}</title></rect>"
            )
            if item.count and len(bins) <= 24:
                parts.append(
                    f'<text x="{_fmt(x + bar_w / 2)}" y="{_fmt(y - 3)}" text-anchor="middle" '
                    f'class="small">{item.count}</text>'
                )
            if i % show_every == 0:
                lx, ly = x + bar_w / 2, top + plot_h + 12
                tick = item.label.split("–")[0]  # a bin's lower edge; the tooltip has both
                parts.append(
                    f'<text x="{_fmt(lx)}" y="{_fmt(ly)}" class="small" text-anchor="end" '
                    f'transform="rotate(-35 {_fmt(lx)} {_fmt(ly)})">{esc(tick)}</text>'
                )
    else:
        parts.append(_empty(left + plot_w / 2, top + plot_h / 2))
    parts.append(
        f'<text x="{left + plot_w / 2}" y="{height - 4}" text-anchor="middle" class="muted">'
        f"{esc(x_label)}</text></svg>"
    )
    return "".join(parts)


def _axes(
    left: float, top: float, plot_w: float, plot_h: float, top_value: float, label: str
) -> str:
    parts = [
        f'<line x1="{left}" y1="{top + plot_h}" x2="{left + plot_w}" y2="{top + plot_h}" '
        'stroke="#333"/>',
        f'<line x1="{left}" y1="{top}" x2="{left}" y2="{top + plot_h}" stroke="#333"/>',
    ]
    for step in range(5):
        value = top_value * step / 4
        y = top + plot_h - plot_h * step / 4
        parts.append(
            f'<line x1="{left - 3}" y1="{_fmt(y)}" x2="{left + plot_w}" y2="{_fmt(y)}" '
            f'stroke="#eee"/><text x="{left - 5}" y="{_fmt(y + 3)}" text-anchor="end" '
            f'class="small">{esc(_short(value))}</text>'
        )
    parts.append(
        f'<text x="12" y="{_fmt(top + plot_h / 2)}" class="muted" text-anchor="middle" '
        f'transform="rotate(-90 12 {_fmt(top + plot_h / 2)})">{esc(label)}</text>'
    )
    return "".join(parts)


def _short(value: float) -> str:
    for limit, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= limit:
            return f"{_fmt(value / limit)}{suffix}"
    return _fmt(value)


def _empty(x: float, y: float) -> str:
    return f'<text x="{_fmt(x)}" y="{_fmt(y)}" text-anchor="middle" class="muted">no data</text>'


def bar_chart_svg(
    items: Sequence[tuple[str, float]], title: str, unit: str = "", width: int = 520
) -> str:
    """Horizontal bars, one per labelled value (lag per table)."""
    row = 24
    left, right, top = 170, 70, 28
    height = top + row * max(len(items), 1) + 12
    plot_w = width - left - right
    top_value = _nice_max(max((v for _, v in items), default=0.0))
    parts = [
        f'<svg class="chart bars" xmlns="http://www.w3.org/2000/svg" width="{width}" '
        f'height="{height}" viewBox="0 0 {width} {height}" role="img" aria-label="{esc(title)}">',
        f"<title>{esc(title)}</title>",
        f'<text x="8" y="16" class="chart-title">{esc(title)}</text>',
    ]
    if not items:
        parts.append(_empty(width / 2, top + row / 2))
    for i, (label, value) in enumerate(items):
        y = top + i * row
        bar_w = plot_w * max(value, 0.0) / top_value
        text = f"{_short(value)}{unit}"
        parts.append(
            f'<text x="{left - 6}" y="{y + 15}" text-anchor="end" class="small">{esc(label)}</text>'
            f'<rect class="bar" x="{left}" y="{y + 4}" width="{_fmt(bar_w)}" height="{row - 8}" '
            f'fill="{colour(i)}"><title>{esc(label)}: {esc(text)}</title></rect>'
            f'<text x="{_fmt(left + bar_w + 4)}" y="{y + 15}" class="small">{esc(text)}</text>'
        )
    parts.append("</svg>")
    return "".join(parts)


def line_chart_svg(
    series: Mapping[str, Sequence[tuple[datetime, float]]],
    title: str,
    y_label: str,
    x_label: str = "generation time",
    width: int = 640,
) -> str:
    """One line with dots per series over time (rows per generation, per table)."""
    height = 280
    left, right, top, bottom = 56, 150, 28, 46
    plot_w, plot_h = width - left - right, height - top - bottom
    points = [p for values in series.values() for p in values]
    parts = [
        f'<svg class="chart lines" xmlns="http://www.w3.org/2000/svg" width="{width}" '
        f'height="{height}" viewBox="0 0 {width} {height}" role="img" aria-label="{esc(title)}">',
        f"<title>{esc(title)}</title>",
        f'<text x="{left}" y="16" class="chart-title">{esc(title)}</text>',
    ]
    top_value = _nice_max(max((v for _, v in points), default=0.0))
    parts.append(_axes(left, top, plot_w, plot_h, top_value, y_label))
    if not points:
        parts.append(_empty(left + plot_w / 2, top + plot_h / 2))
        parts.append("</svg>")
        return "".join(parts)
    t0 = min(t for t, _ in points).timestamp()
    t1 = max(t for t, _ in points).timestamp()
    span = (t1 - t0) or 1.0

    def xy(moment: datetime, value: float) -> tuple[float, float]:
        x = left + (plot_w * (moment.timestamp() - t0) / span if t1 > t0 else plot_w / 2)
        return x, top + plot_h - plot_h * value / top_value

    for i, (name, values) in enumerate(sorted(series.items())):
        stroke = colour(i)
        ordered = sorted(values)
        coords = [xy(t, v) for t, v in ordered]
        if len(coords) > 1:
            line = " ".join(f"{_fmt(x)},{_fmt(y)}" for x, y in coords)
            parts.append(
                f'<polyline class="series" points="{line}" fill="none" stroke="{stroke}" '
                'stroke-width="2"/>'
            )
        for (moment, value), (x, y) in zip(ordered, coords, strict=True):
            parts.append(
                f'<circle class="point" cx="{_fmt(x)}" cy="{_fmt(y)}" r="3.5" fill="{stroke}">'
                f"<title>{esc(name)} {esc(moment.strftime('%Y-%m-%d %H:%M:%S'))}: "
                f"{esc(_short(value))}</title></circle>"
            )
        ly = top + 10 + i * 18
        parts.append(
            f'<rect x="{left + plot_w + 14}" y="{ly - 9}" width="12" height="12" fill="{stroke}"/>'
            f'<text x="{left + plot_w + 30}" y="{ly + 1}" class="small">{esc(name)}</text>'
        )
    for stamp, anchor in ((t0, "start"), (t1, "end")):
        label = datetime.fromtimestamp(stamp, UTC).strftime("%m-%d %H:%M:%SZ")
        x = left if anchor == "start" else left + plot_w
        parts.append(
            f'<text x="{_fmt(x)}" y="{top + plot_h + 16}" text-anchor="{anchor}" '
            f'class="small">{esc(label)}</text>'
        )
    parts.append(
        f'<text x="{left + plot_w / 2}" y="{height - 6}" text-anchor="middle" class="muted">'
        f"{esc(x_label)}</text></svg>"
    )
    return "".join(parts)
