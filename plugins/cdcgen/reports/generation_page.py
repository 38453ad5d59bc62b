"""The per-generation summary page: counts, expectations, ring picture, distributions."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

from cdcgen.reports import ring_picture, svg
from cdcgen.reports.html import (
    badge,
    cards,
    esc,
    expectations_table,
    fmt_int,
    fmt_time,
    key_values,
    page,
    table,
)
from cdcgen.reports.records import GenerationReport, RingEntry, max_shards_per_node


def _link(href: str, text: str) -> str:
    return f'<a href="{esc(href)}">{esc(text)}</a>'


def data_docs_href(record_path: str, root: str) -> str:
    """A Data Docs path relative to the report dir, seen from a page ``root`` levels down."""
    if not record_path:
        return ""
    if record_path.startswith(("/", "http://", "https://", "file:")):
        return record_path
    return root + record_path


def node_rows(ring: Sequence[RingEntry], colours: dict[str, str]) -> list[tuple[str, ...]]:
    """Per node: ranges, streams, shards, share of the ring (cells escaped)."""
    shards = max_shards_per_node(ring)
    by_node: dict[str, list[RingEntry]] = defaultdict(list)
    for entry in ring:  # once: a ring of 25,600 ranges over 100 nodes, not once per node
        by_node[entry.node].append(entry)
    rows: list[tuple[str, ...]] = []
    for node in sorted(shards):
        mine = by_node[node]
        share = sum(ring_picture.range_fraction(e.range_start, e.range_end) for e in mine)
        rows.append(
            (
                f'<span class="swatch" style="background:{colours[node]}"></span>'
                f"{esc(node or '(unknown)')}",
                fmt_int(len(mine)),
                fmt_int(sum(e.shard_count for e in mine)),
                fmt_int(shards[node]),
                f"{share * 100:.2f}%",
            )
        )
    return rows


def render_generation_page(
    record: GenerationReport, history: Sequence[GenerationReport] = (), root: str = "../"
) -> str:
    """HTML of one generation's page; ``history`` is every run recorded for it, newest first."""
    counts = record.resolved_counts()
    colours = ring_picture.node_colours([e.node for e in record.ring])
    docs = data_docs_href(record.data_docs_path, root)
    title = f"Generation {fmt_time(record.generation_time)}"
    meta = [
        ("generation id", f"<code>{esc(record.generation_id)}</code>"),
        ("status", badge(record.status)),
        ("published", "yes" if record.published else "no"),
        ("source", esc(record.source or "—")),
        ("DAG run", esc(f"{record.dag_id} / {record.run_id}" if record.run_id else "—")),
        ("recorded at", esc(fmt_time(record.created_at))),
        ("Data Docs", _link(docs, "Great Expectations Data Docs") if docs else "—"),
        ("lake version", _lake_version(record)),
    ]
    body = [
        f"<h1>{esc(title)}</h1>",
        key_values(meta),
        "<h2>Counts</h2>",
        cards(
            [
                ("entries (ranges)", fmt_int(counts.entries)),
                ("streams", fmt_int(counts.streams)),
                ("nodes", fmt_int(counts.nodes) if counts.nodes else "—"),
                ("shards", fmt_int(counts.shards) if counts.shards else "—"),
                (
                    "expectations passed",
                    f"{record.expectations_passed}/{len(record.expectations)}",
                ),
            ]
        ),
        "<h2>Expectations</h2>",
        expectations_table(record.expectations),
        "<h2>Ring</h2>",
    ]
    if record.ring:
        legend = "".join(
            f'<span><span class="swatch" style="background:{c}"></span>{esc(n or "(unknown)")}'
            "</span>"
            for n, c in colours.items()
        )
        shard_legend = "".join(
            f'<span><span class="swatch" style="background:{ring_picture.shard_colour(s)}"></span>'
            f"shard {s}</span>"
            for s in range(max(e.shard_count for e in record.ring))
        )
        sizes = [ring_picture.range_fraction(e.range_start, e.range_end) * 100 for e in record.ring]
        body += [
            '<div class="figures"><figure>',
            ring_picture.ring_svg(record.ring, colours),
            "<figcaption>Each arc is a token range <code>(start, end]</code>, clockwise from "
            "the minimum token at the top, coloured by the node that owned it. Dots are "
            "streams at their token, one track per shard index.</figcaption>",
            f'<p class="legend">{legend}</p><p class="legend small">{shard_legend}</p>',
            "</figure><div>",
            table(
                ("node", "ranges", "streams", "shards", "ring share"),
                node_rows(record.ring, colours),
                numeric=(1, 2, 3, 4),
            ),
            "</div></div>",
            "<h2>Distributions</h2>",
            '<div class="figures">',
            svg.histogram_svg(
                svg.integer_bins([e.shard_count for e in record.ring]),
                "Streams per range",
                "streams in the range",
            ),
            svg.histogram_svg(
                svg.linear_bins(sizes, bins=20, unit="%"),
                "Range size",
                "share of the token ring (%)",
            ),
            "</div>",
        ]
    else:
        body.append('<p class="muted">No ring was recorded for this run.</p>')
    if record.notes:
        body += ["<h2>Notes</h2><ul>", *(f"<li>{esc(n)}</li>" for n in record.notes), "</ul>"]
    if len(history) > 1:
        rows = [
            (
                esc(fmt_time(h.created_at)),
                badge(h.status),
                esc(h.run_id or "—"),
                f"{h.expectations_passed}/{len(h.expectations)}",
                "yes" if h.published else "no",
            )
            for h in history
        ]
        body += [
            "<h2>Runs of this generation</h2>",
            table(("recorded at", "status", "run", "expectations", "published"), rows),
        ]
    return page(title, "".join(body), root=root)


def _lake_version(record: GenerationReport) -> str:
    """Which version of the generations table was validated (and published), with the
    digest of its description: what time travel in the lake reads back."""
    if record.lake_version is None:
        return "—"
    digest = record.description_sha256
    return f"{record.lake_version} (description <code>sha256 {esc(digest[:16])}…</code>)"
