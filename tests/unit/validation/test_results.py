"""The one validation result model and the one suite loader (no Spark, no GX run)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cdcgen.validation.errors import ChangesInvalid, SuiteError, ValidationFailed
from cdcgen.validation.results import (
    SUMMARY_ROWS,
    CheckOutcome,
    ValidationResult,
    row_text,
    summary_text,
)
from cdcgen.validation.suites import CHANGE_SUITES, GENERATION_SUITES, load_suite, load_suites

INDEX = Path("/reports/gen/index.html")
# Keys in an order unlike the one shown: row_text must reorder them.
GENERATION_ROW = {
    "version": 2,
    "stream_token": -5,
    "shard": 1,
    "entry_index": 3,
    "stream_id_hex": "0a" * 16,
}
CHANGE_ROW = {
    "expected_stream_hex": "cd" * 16,
    "base_key": '{"pk":17}',
    "batch_seq_no": 0,
    "cdc_time": "e3a1c6a0-1234-11f1-8000-000000000000",
    "stream_hex": "ab" * 16,
}


def _failed(rows: int) -> CheckOutcome:
    samples = tuple({**GENERATION_ROW, "entry_index": i} for i in range(rows))
    check = "stream ID version is 1"
    return CheckOutcome(
        "generation_format", "expect_stream_id_version_one", check, False, rows, samples
    )


def test_row_text_puts_the_identifying_columns_first_for_either_kind_of_row() -> None:
    assert row_text(GENERATION_ROW) == (
        f"stream {'0a' * 16}, entry 3, shard 1, token -5, version=2"
    )
    assert row_text(CHANGE_ROW) == (
        f"stream {'ab' * 16}, cdc$time e3a1c6a0-1234-11f1-8000-000000000000, batch_seq_no 0, "
        f'key {{"pk":17}}, expected_stream_hex={"cd" * 16}'
    )
    assert row_text({"value": 7}) == "value=7"


def test_describe_says_where_the_check_is_defined_and_what_was_wrong() -> None:
    assert _failed(3).describe() == (
        "stream ID version is 1 [generation_format.expect_stream_id_version_one]: "
        "3 offending row(s)"
    )
    count = CheckOutcome("s", "expect_table_row_count", "entries", False, 9, counts_rows=False)
    assert count.describe().endswith(": observed 9")
    broken = CheckOutcome("s", "e", "c", False, error="no such column")
    assert broken.describe() == "c [s.e]: could not run: no such column"


def test_summary_text_names_failures_their_first_rows_skips_and_reports() -> None:
    passed = CheckOutcome("generation_format", "expect_x", "x", True, 0)
    failed = _failed(SUMMARY_ROWS + 2)
    page = Path("/reports/run/checks.html")
    skipped = ["coverage: y (needs topology)"]
    text = summary_text("generation T1 (g1)", [passed, failed], skipped, INDEX, page=page)
    lines = text.splitlines()
    assert lines[0] == "generation T1 (g1): FAILED, 1 of 2 checks passed"
    assert lines[1] == f"  FAILED {failed.describe()}"
    assert lines[2 : 2 + SUMMARY_ROWS] == [f"    {row_text(r)}" for r in failed.samples[:5]]
    assert lines[2 + SUMMARY_ROWS] == "    ... 2 more row(s) on the checks page"
    assert lines[-3:] == [
        "  skipped: coverage: y (needs topology)",
        f"  Data Docs: {INDEX}",
        f"  Checks page: {page}",
    ]
    assert summary_text("changes t r", [passed], [], INDEX).splitlines() == [
        "changes t r: passed, 1 of 1 checks passed",
        f"  Data Docs: {INDEX}",
    ]


def test_failures_and_the_gate_the_caller_names() -> None:
    good = ValidationResult(True, [CheckOutcome("s", "e", "c", True, 0)], INDEX, "fine")
    assert good.failures == [] and good.skipped == [] and good.page is None
    assert good.raise_if_failed(ChangesInvalid) is good
    bad = ValidationResult(False, [*good.checks, _failed(1)], INDEX, "it broke")
    assert bad.failures == [_failed(1)]
    with pytest.raises(ValidationFailed, match="it broke") as failed:
        bad.raise_if_failed(ValidationFailed)
    assert failed.value.result is bad and not isinstance(failed.value, ChangesInvalid)
    with pytest.raises(ChangesInvalid) as changes:
        bad.raise_if_failed(ChangesInvalid)
    assert changes.value.output is None and changes.value.result is bad


# --- suites -------------------------------------------------------------------------------


def test_change_suites_load_and_skip_the_source_count_without_source_counts() -> None:
    suites = load_suites(family=CHANGE_SUITES)
    assert [s.path.name for s in suites] == list(CHANGE_SUITES.files)
    assert {s.batch for s in suites} == set(CHANGE_SUITES.batches)
    (counts,) = [s for s in suites if s.batch == "changes_stream_counts"]
    assert counts.expectations == ()
    assert counts.skipped == ("row count equals the source's (needs source_counts)",)
    every = load_suites(available={"source_counts"}, family=CHANGE_SUITES)
    assert all(s.expectations and not s.skipped for s in every)


def test_every_change_suite_expectation_names_a_registered_gx_type() -> None:
    from great_expectations.expectations.registry import get_expectation_impl

    import cdcgen.validation.change_expectations  # noqa: F401

    for suite in load_suites(available={"source_counts"}, family=CHANGE_SUITES):
        for expectation in suite.expectations:
            assert get_expectation_impl(expectation.type) is not None
            assert expectation.config.get("meta", {}).get("check"), expectation


def test_a_suite_on_another_family_s_batch_is_an_error_naming_the_file(tmp_path: Path) -> None:
    path = tmp_path / "s.json"
    path.write_text(json.dumps({"name": "s", "meta": {"batch": "streams"}, "expectations": []}))
    assert load_suite(path, family=GENERATION_SUITES).batch == "streams"
    with pytest.raises(SuiteError, match=r"s\.json: meta\.batch of a changes suite"):
        load_suite(path, family=CHANGE_SUITES)
    with pytest.raises(SuiteError, match="cannot read suite"):
        load_suites(tmp_path, family=CHANGE_SUITES)  # no fallback to another directory


def _suite(tmp_path: Path, *expectations: object) -> Path:
    path = tmp_path / "s.json"
    suite = {"name": "s", "meta": {"batch": "streams"}, "expectations": list(expectations)}
    path.write_text(json.dumps(suite))
    return path


def test_each_expectation_is_read_once_its_configuration_kept_for_gx(tmp_path: Path) -> None:
    named = {
        "type": "expect_streams_sorted",
        "kwargs": {"column": "stream_id"},
        "meta": {"check": "streams in order", "layouts": ["vnodes"], "notes": "kept"},
    }
    needy = {"type": "expect_ring_match", "meta": {"requires": ["topology"]}}
    bare = {"type": "expect_table_row_count_to_be_between"}
    path = _suite(tmp_path, named, needy, bare)
    suite = load_suite(path, available={"topology"})
    first, second, third = suite.expectations
    assert first.config == named  # GX gets the expectation as written
    assert (first.type, first.name, first.layouts) == (
        "expect_streams_sorted",
        "streams in order",
        frozenset({"vnodes"}),
    )
    assert (second.name, second.requires) == ("expect_ring_match", ("topology",))
    assert third.layouts == frozenset({"vnodes", "tablets"}) and third.requires == ()
    tablets = load_suite(path, layout="tablets")
    assert [e.name for e in tablets.expectations] == ["expect_table_row_count_to_be_between"]
    assert tablets.skipped == ("expect_ring_match (needs topology)",)


def test_an_expectation_whose_meta_is_unusable_is_an_error_naming_it(tmp_path: Path) -> None:
    bad = [
        ({"meta": {}}, r"expectations\[0\] needs a 'type'"),
        ({"type": "x", "meta": {"layouts": "vnodes"}}, r"expectations\[0\]: unusable meta"),
        ({"type": "x", "meta": {"requires": [["topology"]]}}, r"expectations\[0\]: unusable"),
        ({"type": "x", "meta": {"layouts": ["ring"]}}, r"unknown layout\(s\) \['ring'\]"),
    ]
    for expectation, message in bad:
        with pytest.raises(SuiteError, match=message):
            load_suite(_suite(tmp_path, expectation))
