"""Inline SVG charts: histograms, bar and line charts (the ring: :mod:`.ring_picture`).

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

from cdcgen.reports.html import esc

# Okabe-Ito: distinguishable by colour-blind readers; cycled with a hue walk past 8.
_PALETTE = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#666666")


def colour(index: int) -> str:
    """The ``index``-th categorical colour."""
    if index < len(_PALETTE):
        return _PALETTE[index]
    hue = (index * 137.508) % 360  # golden-angle walk: neighbours stay apart
    return f"hsl({hue:.0f},55%,45%)"


def num(value: float) -> str:
    """A number as SVG text: at most two decimals, no trailing zeros."""
    return f"{value:.2f}".rstrip("0").rstrip(".")


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
        return [Bin(f"{num(low)}{unit}", len(values))]
    width = (high - low) / bins
    counts = [0] * bins
    for value in values:
        counts[min(int((value - low) / width), bins - 1)] += 1
    return [
        Bin(f"{num(low + i * width)}–{num(low + (i + 1) * width)}{unit}", count)
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
                f'<rect class="bar" x="{num(x)}" y="{num(y)}" width="{num(bar_w)}" '
                f'height="{num(bar_h)}" fill="{colour(0)}"><title>{esc(item.label)}: '
                f"{item.count}</title></rect>"
            )
            if item.count and len(bins) <= 24:
                parts.append(
                    f'<text x="{num(x + bar_w / 2)}" y="{num(y - 3)}" text-anchor="middle" '
                    f'class="small">{item.count}</text>'
                )
            if i % show_every == 0:
                lx, ly = x + bar_w / 2, top + plot_h + 12
                tick = item.label.split("–")[0]  # a bin's lower edge; the tooltip has both
                parts.append(
                    f'<text x="{num(lx)}" y="{num(ly)}" class="small" text-anchor="end" '
                    f'transform="rotate(-35 {num(lx)} {num(ly)})">{esc(tick)}</text>'
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
            f'<line x1="{left - 3}" y1="{num(y)}" x2="{left + plot_w}" y2="{num(y)}" '
            f'stroke="#eee"/><text x="{left - 5}" y="{num(y + 3)}" text-anchor="end" '
            f'class="small">{esc(_short(value))}</text>'
        )
    parts.append(
        f'<text x="12" y="{num(top + plot_h / 2)}" class="muted" text-anchor="middle" '
        f'transform="rotate(-90 12 {num(top + plot_h / 2)})">{esc(label)}</text>'
    )
    return "".join(parts)


def _short(value: float) -> str:
    for limit, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= limit:
            return f"{num(value / limit)}{suffix}"
    return num(value)


def _empty(x: float, y: float) -> str:
    return f'<text x="{num(x)}" y="{num(y)}" text-anchor="middle" class="muted">no data</text>'


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
            f'<rect class="bar" x="{left}" y="{y + 4}" width="{num(bar_w)}" height="{row - 8}" '
            f'fill="{colour(i)}"><title>{esc(label)}: {esc(text)}</title></rect>'
            f'<text x="{num(left + bar_w + 4)}" y="{y + 15}" class="small">{esc(text)}</text>'
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
            line = " ".join(f"{num(x)},{num(y)}" for x, y in coords)
            parts.append(
                f'<polyline class="series" points="{line}" fill="none" stroke="{stroke}" '
                'stroke-width="2"/>'
            )
        for (moment, value), (x, y) in zip(ordered, coords, strict=True):
            parts.append(
                f'<circle class="point" cx="{num(x)}" cy="{num(y)}" r="3.5" fill="{stroke}">'
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
            f'<text x="{num(x)}" y="{top + plot_h + 16}" text-anchor="{anchor}" '
            f'class="small">{esc(label)}</text>'
        )
    parts.append(
        f'<text x="{left + plot_w / 2}" y="{height - 6}" text-anchor="middle" class="muted">'
        f"{esc(x_label)}</text></svg>"
    )
    return "".join(parts)
