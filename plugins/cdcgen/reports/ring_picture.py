"""The token ring as an inline SVG picture: one arc per range, coloured by the node
owning it, and one dot per stream on a track per shard.

A generation's shape is easiest to judge by eye: uneven ranges, a node with too few
shards, streams off their range all show. Geometry first (a token's angle, a range's
share of the ring), then the picture; charts and shared SVG helpers are in :mod:`.svg`.
"""

from __future__ import annotations

import math
from bisect import bisect_left
from collections.abc import Mapping, Sequence

from cdcgen.reports.html import esc
from cdcgen.reports.records import RingEntry
from cdcgen.reports.svg import colour, num

TOKEN_SPACE = 1 << 64
_HALF = 1 << 63

_SHARD_PALETTE = ("#1b1b1b", "#7a3b9a", "#b8860b", "#2e8b57", "#c0392b", "#1f618d", "#7f8c8d")

#: Beyond this many stream dots the ring draws none (the page would get heavy).
MAX_STREAM_DOTS = 6000
#: Beyond this many ranges the ring draws :data:`RING_ARCS` equal arcs instead, each
#: coloured by the node owning its middle token. A range of the seed's 25,600-range ring
#: is a tenth of a pixel wide on the picture; a path (and tooltip) per range made the
#: page heavy and slow to draw, for the same pixels.
MAX_RANGE_ARCS = 2048
RING_ARCS = 1024


def shard_colour(shard: int) -> str:
    return _SHARD_PALETTE[shard % len(_SHARD_PALETTE)]


def node_colours(nodes: Sequence[str]) -> dict[str, str]:
    """Stable colours: nodes sorted by name get palette entries in order."""
    return {node: colour(i) for i, node in enumerate(sorted(set(nodes)))}


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
        f"M{num(x0)},{num(y0)} A{num(r_out)},{num(r_out)} 0 {large} 1 {num(x1)},{num(y1)} "
        f"L{num(x2)},{num(y2)} A{num(r_in)},{num(r_in)} 0 {large} 0 {num(x3)},{num(y3)} Z"
    )


def ring_svg(ring: Sequence[RingEntry], colours: Mapping[str, str], size: int = 460) -> str:
    """The generation's ring: one arc per range coloured by owning node (a ring of more
    than :data:`MAX_RANGE_ARCS` ranges: equal arcs, see :func:`_owner_arcs`), stream dots
    per shard.

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
        f'<circle cx="{num(cx)}" cy="{num(cy)}" r="{num(r_out)}" fill="none" '
        'stroke="#ccc" stroke-width="1"/>',
    ]
    if len(ring) > MAX_RANGE_ARCS:
        parts += _owner_arcs(ring, colours, cx, cy, r_in, r_out)
    for index, entry in enumerate(ring if len(ring) <= MAX_RANGE_ARCS else ()):
        fill = colours.get(entry.node, "#999")
        fraction = range_fraction(entry.range_start, entry.range_end)
        label = (
            f"range {index}: ({entry.range_start}, {entry.range_end}] node "
            f"{entry.node or '?'}, {entry.shard_count} stream(s), {fraction * 100:.3f}% of ring"
        )
        if fraction >= 1.0:
            shape = (
                f'<circle cx="{num(cx)}" cy="{num(cy)}" r="{num((r_in + r_out) / 2)}" '
                f'fill="none" stroke="{fill}" stroke-width="{num(r_out - r_in)}">'
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
                    f'<circle class="stream" cx="{num(x)}" cy="{num(y)}" r="2.2" '
                    f'fill="{shard_colour(shard)}"><title>{esc(entry.node or "?")} shard '
                    f"{shard}: stream token {token}</title></circle>"
                )
    for entry in ring if len(ring) <= 64 else ():
        x0, y0 = _point(cx, cy, r_out, token_angle(entry.range_end))
        x1, y1 = _point(cx, cy, r_out + 8, token_angle(entry.range_end))
        parts.append(
            f'<line x1="{num(x0)}" y1="{num(y0)}" x2="{num(x1)}" y2="{num(y1)}" '
            'stroke="#333" stroke-width="1"/>'
        )
    parts.append(
        f'<text x="{num(cx)}" y="{num(cy - 6)}" text-anchor="middle" class="big">'
        f"{len(ring)}</text>"
        f'<text x="{num(cx)}" y="{num(cy + 14)}" text-anchor="middle" class="muted">'
        "ranges</text>"
        f'<text x="{num(cx)}" y="10" text-anchor="middle" class="muted">min token</text>'
    )
    parts.append("</svg>")
    return "".join(parts)


def _owner_arcs(
    ring: Sequence[RingEntry],
    colours: Mapping[str, str],
    cx: float,
    cy: float,
    r_in: float,
    r_out: float,
) -> list[str]:
    """:data:`RING_ARCS` equal arcs, each the colour of the node owning its middle token
    (the range whose end is the first at or after it), neighbours of one node merged."""
    ends = sorted((e.range_end, e.node) for e in ring)
    end_tokens = [end for end, _ in ends]
    owners = []
    for arc in range(RING_ARCS):
        middle = ((2 * arc + 1) * TOKEN_SPACE) // (2 * RING_ARCS) - _HALF
        owners.append(ends[bisect_left(end_tokens, middle) % len(ends)][1])
    parts = []
    first = 0
    for arc in range(1, RING_ARCS + 1):
        if arc < RING_ARCS and owners[arc] == owners[first]:
            continue
        node, count = owners[first], arc - first
        label = f"node {node or '?'} owns the middle of {count} of {RING_ARCS} arcs here"
        fill = colours.get(node, "#999")
        if count == RING_ARCS:  # one node all around: a full circle, no arc to sweep
            parts.append(
                f'<circle class="arc" cx="{num(cx)}" cy="{num(cy)}" '
                f'r="{num((r_in + r_out) / 2)}" fill="none" stroke="{fill}" '
                f'stroke-width="{num(r_out - r_in)}"><title>{esc(label)}</title></circle>'
            )
            break
        sweep = count / RING_ARCS * 2 * math.pi
        path = _sector_path(cx, cy, r_in, r_out, first / RING_ARCS * 2 * math.pi, sweep)
        parts.append(
            f'<path class="arc" d="{path}" fill="{fill}"><title>{esc(label)}</title></path>'
        )
        first = arc
    return parts
