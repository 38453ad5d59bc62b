"""The report renderers: records round-trip, pages show the right numbers and pictures."""

from __future__ import annotations

import random
import re
import xml.etree.ElementTree as ET
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from html.parser import HTMLParser
from pathlib import Path

import pytest

from cdcgen.core.generation_arrays import GenerationArrays
from cdcgen.core.topology import Node, make_generation
from cdcgen.reports.adapters import expectations_from_gx, ring_from_arrays, ring_from_description
from cdcgen.reports.changes_page import render_changes_page
from cdcgen.reports.checks_page import ROWS_SHOWN, checks_page_path, write_checks_page
from cdcgen.reports.errors import RecordError
from cdcgen.reports.generation_page import render_generation_page
from cdcgen.reports.index_page import render_index
from cdcgen.reports.record_json import dumps, loads
from cdcgen.reports.records import (
    ChangesReport,
    ExpectationOutcome,
    GenerationReport,
    GenerationRows,
    RingEntry,
    RunStatus,
    TableLag,
    generation_page_name,
)
from cdcgen.reports.ring_picture import (
    MAX_RANGE_ARCS,
    MAX_STREAM_DOTS,
    RING_ARCS,
    node_colours,
    range_fraction,
    ring_svg,
    token_angle,
)
from cdcgen.reports.sample import sample_changes, sample_generation
from cdcgen.reports.site import build_site, load_records, record_run, save_record
from cdcgen.validation.results import CheckOutcome

T0 = datetime(2026, 11, 1, 12, 0, tzinfo=UTC)
MIN, MAX = -(1 << 63), (1 << 63) - 1

SVG_NS = "{http://www.w3.org/2000/svg}"


class _Collector(HTMLParser):
    """Headings' text and a count of each tag: enough to check a page's structure."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: dict[str, int] = {}
        self.headings: list[str] = []
        self._in_heading = False
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags[tag] = self.tags.get(tag, 0) + 1
        if tag in ("h1", "h2"):
            self._in_heading = True
            self.headings.append("")

    def handle_endtag(self, tag: str) -> None:
        if tag in ("h1", "h2"):
            self._in_heading = False

    def handle_data(self, data: str) -> None:
        self.text.append(data)
        if self._in_heading:
            self.headings[-1] += data


def parse(html: str) -> _Collector:
    collector = _Collector()
    collector.feed(html)
    return collector


def svgs(html: str) -> list[ET.Element]:
    """Every inline SVG of a page, parsed as XML (so each must be well-formed)."""
    return [ET.fromstring(m) for m in re.findall(r"<svg .*?</svg>", html, flags=re.S)]


def three_node_generation() -> GenerationReport:
    return sample_generation(T0, seed=3, vnodes=8)


# --- records ----------------------------------------------------------------------------


def test_generation_record_round_trips_with_full_64_bit_tokens() -> None:
    record = GenerationReport(
        generation_id="8c2d-…",
        generation_time=T0,
        status=RunStatus.SUCCESS,
        expectations=(ExpectationOutcome("e1", True, "ok", "c"),),
        ring=(RingEntry(MAX, MIN + 1, "n1", 2, (MAX, MIN + 1)),),
        dag_id="cdc_generations",
        run_id="manual__x",
        published=True,
        data_docs_path="data_docs/index.html",
    )
    assert loads(dumps(record)) == record


def test_changes_record_round_trips() -> None:
    record = sample_changes(T0, [T0 - timedelta(hours=1), T0])
    assert loads(dumps(record)) == record


@pytest.mark.parametrize(
    "text",
    [
        "not json",
        "[]",
        '{"kind": "generation"}',
        '{"schema": 99, "kind": "changes", "status": "success", "created_at": "2026-01-01"}',
        '{"kind": "nope", "status": "success", "created_at": "2026-01-01T00:00:00"}',
    ],
)
def test_unreadable_records_raise_record_error(text: str) -> None:
    with pytest.raises(RecordError):
        loads(text)


def test_counts_are_derived_from_the_ring_when_not_recorded() -> None:
    record = three_node_generation()
    counts = record.resolved_counts()
    assert counts.entries == 24
    assert counts.nodes == 3
    assert counts.streams == sum(e.shard_count for e in record.ring)
    assert counts.shards == 1 + 2 + 3  # sample nodes have 1, 2 and 3 shards


# --- geometry ---------------------------------------------------------------------------


def test_ring_geometry() -> None:
    assert token_angle(MIN) == 0
    assert range_fraction(MIN, 0) == 0.5
    assert range_fraction(0, MIN) == 0.5  # wraps around
    assert range_fraction(5, 5) == 1.0  # a one-token ring: one range, all of it


def test_ring_from_description_covers_the_ring_exactly_once() -> None:
    rng = random.Random(1)
    nodes = [Node("a", 2, 12, (-100, 500)), Node("b", 1, 0, (7_000,))]
    ring = ring_from_description(make_generation(nodes, rng), {-100: "a", 500: "a", 7_000: "b"})
    assert [(e.range_start, e.range_end, e.node, e.shard_count) for e in ring] == [
        (7_000, -100, "a", 2),
        (-100, 500, "a", 2),
        (500, 7_000, "b", 1),
    ]
    assert sum(range_fraction(e.range_start, e.range_end) for e in ring) == pytest.approx(1)
    assert all(len(e.stream_tokens) == e.shard_count for e in ring)


def test_records_of_generations_too_large_for_stream_dots_leave_their_tokens_out() -> None:
    rng = random.Random(2)
    tokens = tuple(sorted({rng.randint(-(2**62), 2**62) for _ in range(100)}))
    small = make_generation([Node("a", 8, 12, tokens)], rng)  # 800 streams: dots drawn
    large = make_generation([Node("a", 64, 12, tokens)], rng)  # 6,400 streams: none
    assert MAX_STREAM_DOTS < 6_400
    for description, dots in ((small, True), (large, False)):
        for ring in (
            ring_from_description(description),
            ring_from_arrays(GenerationArrays.from_description(description)),
        ):
            assert all(bool(e.stream_tokens) is dots for e in ring)
            assert sum(e.shard_count for e in ring) == sum(1 for _ in description.streams())
    record = sample_generation(T0, seed=3, failing=0, vnodes=8)
    page = render_generation_page(replace(record, ring=ring_from_description(large)), [record])
    assert 'class="stream"' not in page and 'class="range"' in page


def test_a_ring_of_many_ranges_is_drawn_as_equal_arcs_of_their_owners() -> None:
    rng = random.Random(4)
    tokens = sorted({rng.randint(MIN + 1, MAX) for _ in range(3 * MAX_RANGE_ARCS)})
    ring = tuple(
        RingEntry(tokens[i - 1], end, "ab"[i % 2] if end < 0 else "c", 1, ())
        for i, end in enumerate(tokens)
    )
    svg = ring_svg(ring, node_colours([e.node for e in ring]))
    root = ET.fromstring(svg)
    assert root.findall(f".//{SVG_NS}path[@class='range']") == []
    arcs = root.findall(f".//{SVG_NS}path[@class='arc']")
    assert 2 <= len(arcs) <= RING_ARCS
    titles = [a.find(f"{SVG_NS}title").text or "" for a in arcs]  # type: ignore[union-attr]
    # The positive half of the ring belongs to c alone: one arc, half of them.
    assert f"node c owns the middle of {RING_ARCS // 2} of {RING_ARCS} arcs here" in titles
    assert sum(int(t.split()[6]) for t in titles) == RING_ARCS
    lone = ring_svg(tuple(replace(e, node="c") for e in ring), {"c": "#123456"})
    assert lone.count('class="arc"') == 1 and '<circle class="arc"' in lone


# --- pages ------------------------------------------------------------------------------


def test_generation_page_shows_counts_expectations_ring_and_distributions() -> None:
    record = sample_generation(T0, seed=3, failing=2, vnodes=8)
    html = render_generation_page(record, [record])
    page = parse(html)
    assert page.headings[0] == "Generation 2026-11-01 12:00:00.000Z"
    assert page.headings[1:] == ["Counts", "Expectations", "Ring", "Distributions"]
    text = " ".join(page.text)
    counts = record.resolved_counts()
    for number in (counts.entries, counts.streams, counts.nodes, counts.shards):
        assert f">{number}<" in html
    assert "6 of 8" in text and "6/8" in text
    assert html.count('class="badge pass"') == 6
    assert html.count('class="badge fail"') == 2
    ring, streams_hist, sizes_hist = svgs(html)
    assert len(ring.findall(f"{SVG_NS}path")) == counts.entries
    assert len(ring.findall(f".//{SVG_NS}circle[@class='stream']")) == counts.streams
    assert len(streams_hist.findall(f"{SVG_NS}rect[@class='bar']")) == 3  # 1, 2, 3 streams
    assert len(sizes_hist.findall(f"{SVG_NS}rect[@class='bar']")) == 20
    for node in ("scylla-1", "scylla-2", "scylla-3"):
        assert node in text


def test_generation_page_escapes_names() -> None:
    hostile = '<script>alert("x")</script>&'
    record = GenerationReport(
        generation_id=hostile,
        generation_time=T0,
        status=RunStatus.FAILED,
        expectations=(ExpectationOutcome(hostile, False, hostile, hostile),),
        ring=(RingEntry(0, 0, hostile, 1, (0,)),),
        notes=(hostile,),
    )
    html = render_generation_page(record)
    assert "<script>" not in html
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;&amp;" in html
    (ring, _, _) = svgs(html)
    # A one-range ring is a full circle, not a degenerate arc.
    assert ring.find(f"{SVG_NS}circle[@stroke-width]") is not None


def test_changes_page_shows_lag_watermark_and_rows_per_generation() -> None:
    gens = [T0 - timedelta(hours=2), T0 - timedelta(hours=1)]
    records = [sample_changes(T0, gens), sample_changes(T0 + timedelta(minutes=5), gens, seed=2)]
    html = render_changes_page(records)
    page = parse(html)
    assert page.headings == [
        "Changes",
        "Lag and watermark per table",
        "Rows per generation over time",
        "Runs",
    ]
    assert "shop.orders" in html and "shop.customers" in html
    bars, lag_lines, rows_lines = svgs(html)
    assert len(bars.findall(f"{SVG_NS}rect[@class='bar']")) == 2
    assert len(rows_lines.findall(f"{SVG_NS}polyline")) == 2  # one line per table
    assert len(rows_lines.findall(f"{SVG_NS}circle")) == 4  # two generations each
    assert len(lag_lines.findall(f"{SVG_NS}polyline")) == 2
    total = sum(r.rows for rec in records for r in rec.rows_per_generation)
    assert f"{total:,}" in html


def test_changes_runs_show_the_lake_versions_they_committed() -> None:
    record = sample_changes(T0, [T0 - timedelta(hours=1)])
    wrote = replace(record, tables=(replace(record.tables[0], lake_versions=(4, 5)),))
    assert loads(dumps(wrote)) == wrote
    html = render_changes_page([wrote])
    assert "lake versions" in parse(html).text and "4, 5" in parse(html).text
    assert "4, 5" not in render_changes_page([record])


def test_generation_pages_show_the_lake_version_validated() -> None:
    record = sample_generation(T0)
    read = replace(record, lake_version=7, description_sha256="ab" * 32)
    assert loads(dumps(read)) == read
    text = " ".join(parse(render_generation_page(read)).text)
    assert "lake version" in text and "7 (description" in text and "sha256 abababababababab" in text
    assert "sha256" not in " ".join(parse(render_generation_page(record)).text)


def test_changes_page_without_runs_says_so() -> None:
    html = render_changes_page([])
    assert "No changes run has been recorded yet." in html
    assert "no data" in html


def test_checks_page_lists_each_failed_check_s_rows_by_column(tmp_path: Path) -> None:
    run = tmp_path / "changes" / "shop.orders" / "r1"
    rows = tuple(
        {"stream_hex": f"{i:032x}", "cdc_time": f"t{i}", "base_key": '{"pk":"<b>"}'}
        for i in range(ROWS_SHOWN + 10)
    )
    misrouted = CheckOutcome(
        "changes_rows", "expect_change_in_its_keys_stream", "colocation", False, len(rows), rows
    )
    complete = CheckOutcome("changes_rows", "expect_complete_batches", "batches", True, 0)
    skipped = ["changes_counts: row count (needs source_counts)"]
    index = run / "index.html"
    path = write_checks_page(run, "shop.orders r1", [complete, misrouted], skipped, index)
    assert path == checks_page_path(run) and path.parent == run
    html = path.read_text()
    page = parse(html)
    assert page.headings == ["Row checks: shop.orders r1", "Offending rows", "Skipped"]
    assert '<a href="index.html">' in html
    assert "<th>stream_hex</th><th>cdc_time</th><th>base_key</th>" in html
    assert f"colocation: {len(rows)} offending row(s), first {ROWS_SHOWN} shown" in html
    shown = {row["stream_hex"] for row in rows[:ROWS_SHOWN]}
    assert all(stream in html for stream in shown)
    assert rows[ROWS_SHOWN]["stream_hex"] not in html
    assert "<b>" not in html and "&lt;b&gt;" in html
    assert skipped[0] in html


def test_index_lists_every_run_with_links() -> None:
    gen = three_node_generation()
    changes = ChangesReport(
        status=RunStatus.RUNNING,
        tables=(TableLag("ks", "t", None, None),),
        rows_per_generation=(GenerationRows(T0, "g", "ks.t", 5),),
        created_at=T0 + timedelta(hours=1),
    )
    html = render_index([gen, changes], problems=["bad.json: not JSON"])
    assert f'href="generations/{generation_page_name(gen)}"' in html
    assert 'href="changes.html"' in html
    assert "bad.json: not JSON" in html
    page = parse(html)
    assert page.headings == ["cdcgen runs", "Unreadable records", "Every run"]
    assert page.tags["tr"] == 3  # header + two runs


def test_build_site_writes_every_page_and_survives_a_broken_record(tmp_path: Path) -> None:
    first = sample_generation(T0, seed=1, vnodes=4)
    rerun = sample_generation(T0, seed=1, vnodes=4, failing=1)
    rerun = replace(rerun, created_at=first.created_at + timedelta(1), run_id="manual__again")
    save_record(tmp_path, first)
    page = record_run(tmp_path, rerun)
    (tmp_path / "runs" / "junk.json").write_text("{")
    paths = build_site(tmp_path)
    assert paths.generation_pages == (page,)
    assert page.exists() and paths.index.exists() and paths.changes.exists()
    html = page.read_text()
    assert "Runs of this generation" in html  # both runs, newest first
    assert html.index("failed") < html.index("success", html.index("Runs of this generation"))
    assert len(paths.problems) == 1 and "junk.json" in paths.problems[0]
    # Every relative link in the index resolves to a written file.
    index = paths.index.read_text()
    for href in re.findall(r'href="([^"#:]+)"', index):
        assert (tmp_path / href).exists(), href


def test_a_later_step_of_the_same_run_updates_its_record(tmp_path: Path) -> None:
    validated = sample_generation(T0, vnodes=2)
    record_run(tmp_path, validated)
    record_run(tmp_path, replace(validated, published=True))
    records, _ = load_records(tmp_path)
    assert [r.published for r in records if isinstance(r, GenerationReport)] == [True]


def test_absolute_data_docs_paths_inside_the_site_become_relative_links(tmp_path: Path) -> None:
    docs = tmp_path / "generation_ts=1" / "index.html"
    docs.parent.mkdir()
    docs.write_text("docs")
    page = record_run(tmp_path, replace(sample_generation(T0, vnodes=2), data_docs_path=str(docs)))
    assert 'href="../generation_ts=1/index.html"' in page.read_text()
    assert 'href="generation_ts=1/index.html"' in (tmp_path / "index.html").read_text()


def test_foreign_json_in_runs_is_not_a_record_and_not_a_problem(tmp_path: Path) -> None:
    (tmp_path / "runs").mkdir()
    (tmp_path / "runs" / "manual__x.json").write_text('{"validation": "passed"}')
    records, problems = load_records(tmp_path)
    assert records == [] and problems == []


def test_expectations_from_gx_result_dict() -> None:
    validation = {
        "success": False,
        "results": [
            {
                "success": True,
                "expectation_config": {
                    "type": "expect_column_values_to_not_be_null",
                    "kwargs": {"column": "stream_id"},
                    "meta": {},
                },
                "result": {"element_count": 10, "unexpected_count": 0},
                "exception_info": {"raised_exception": False},
            },
            {
                "success": False,
                "expectation_config": {
                    "type": "unexpected_rows_expectation",
                    "kwargs": {},
                    "description": "vnode colocation",
                },
                "result": {"observed_value": 3},
            },
        ],
    }
    outcomes = expectations_from_gx(validation)
    assert outcomes == (
        ExpectationOutcome("expect_column_values_to_not_be_null", True, "", "stream_id"),
        ExpectationOutcome("vnode colocation", False, "observed 3", None),
    )
