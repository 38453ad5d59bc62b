"""The row checks' pure parts: the vectorized expected stream and the report record."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from cdcgen.changes.report import changes_report
from cdcgen.changes.verdicts import row_checks
from cdcgen.core.changes_result import ChangesRunResult
from cdcgen.core.expected_streams import GenerationMapper
from cdcgen.core.stream_id import StreamId
from cdcgen.core.tablets import TabletStreamSet
from cdcgen.core.time import to_micros
from cdcgen.core.topology import Node, make_generation
from cdcgen.core.windows import Interval, generation_spans, tablet_spans
from cdcgen.reports.records import RunStatus
from cdcgen.validation.results import CheckOutcome, ValidationResult, row_text

T0 = datetime(2026, 11, 22, 10, tzinfo=UTC)


def vnode_spans():
    rng = random.Random(7)
    first = make_generation([Node("a", 3, 12, (-(2**61), 2**60))], rng)
    second = make_generation(
        [Node("a", 3, 12, (-(2**61), 2**60)), Node("b", 2, 12, (0, 2**62))], rng
    )
    return generation_spans([(T0, first, "g1"), (T0 + timedelta(minutes=5), second, "g2")])


@settings(max_examples=40, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(-(2**63) + 1, 2**63 - 1), st.integers(0, 600_000_000)),
        min_size=1,
        max_size=50,
    )
)
def test_mapper_agrees_with_get_stream_of_the_generation_at_write_time(rows) -> None:
    spans = vnode_spans()
    mapper = GenerationMapper(spans)
    tokens = np.array([t for t, _ in rows], dtype=np.int64)
    micros = np.array([to_micros(T0) + offset for _, offset in rows], dtype=np.int64)
    got = mapper.expected_streams(tokens, micros)
    for (token, offset), hex_ in zip(rows, got, strict=True):
        generation = spans[0] if offset < 300_000_000 else spans[1]
        assert hex_ == generation.get_stream(token).hex


def test_mapper_handles_tablets_missing_tokens_and_rows_before_any_generation() -> None:
    rng = random.Random(1)
    streams = tuple(StreamId.from_parts(t, 0, rng.getrandbits(38)) for t in (-10, 50))
    spans = tablet_spans([TabletStreamSet(T0, streams)])
    mapper = GenerationMapper(spans)
    at = to_micros(T0) + 1
    tokens = np.array([-11, 0, 50, 51, np.nan, 0], dtype=np.float64)
    micros = np.array([at, at, at, at, at, to_micros(T0) - 1], dtype=np.int64)
    assert mapper.expected_streams(tokens, micros) == [
        streams[0].hex, streams[1].hex, streams[1].hex, None, None, None,
    ]  # fmt: skip


def test_report_names_offending_rows_and_fails_the_run(tmp_path: Path) -> None:
    spans = vnode_spans()
    interval = Interval(T0, T0 + timedelta(minutes=10))
    result = ChangesRunResult(
        table="shop.orders",
        interval=(interval.start.isoformat(), interval.end.isoformat()),
        run_id="r1",
        lake_root=str(tmp_path),
        rows_written=12,
        rows_per_generation={spans[0].label: 7, spans[1].label: 5},
        watermark=interval.end.isoformat(),
    )
    bad_row = {
        "stream_hex": "ab" * 16,
        "cdc_time": "e3a1c6a0-1234-11f1-8000-000000000000",
        "batch_seq_no": 0,
        "base_key": '{"pk":17}',
        "expected_stream_hex": "cd" * 16,
    }
    checks = ValidationResult(
        passed=False,
        checks=[
            CheckOutcome(
                "changes_rows",
                "expect_change_in_its_keys_stream",
                "colocation",
                False,
                1,
                (bad_row,),
            ),
            CheckOutcome("changes_rows", "expect_no_duplicate_changes", "no duplicates", True, 0),
        ],
        report_index=tmp_path / "docs" / "index.html",
        summary="",
    )
    record = changes_report(
        result.checked(row_checks(checks)),
        checks,
        report_dir=tmp_path,
        now=interval.end + timedelta(seconds=40),
    )
    assert record.status is RunStatus.FAILED
    (lag,) = record.tables
    assert lag.watermark == interval.end and lag.lag_seconds == 40 and lag.rows == 12
    assert sorted(r.rows for r in record.rows_per_generation) == [5, 7]
    failed = [o for o in record.expectations if not o.passed]
    assert len(failed) == 1
    assert "ab" * 16 in failed[0].details and '{"pk":17}' in failed[0].details
    assert record.data_docs_path == "docs/index.html"
    assert row_text(bad_row).startswith(f"stream {'ab' * 16}, cdc$time e3a1c6a0")
