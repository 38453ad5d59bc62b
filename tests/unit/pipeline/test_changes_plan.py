"""The ``cdc_changes`` steps that need no cluster: intervals, plans, summaries, settings."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from cdcgen.config import PipelineConfig
from cdcgen.core.generation import SourceMode
from cdcgen.core.user_text import file_name
from cdcgen.pipeline import changes_plan

START = datetime(2026, 11, 22, 10, 0, tzinfo=UTC)
END = START + timedelta(minutes=15)
LATER = END + timedelta(minutes=7, microseconds=123_456)


def test_scheduled_and_backfill_runs_cover_their_data_interval() -> None:
    assert changes_plan.run_interval("scheduled", START, END, LATER) == (START, END, "incremental")
    assert changes_plan.run_interval("backfill", START, END, LATER) == (START, END, "backfill")


def test_manual_and_asset_runs_read_up_to_when_they_were_triggered() -> None:
    for run_type in ("manual", "asset_triggered"):
        start, end, mode = changes_plan.run_interval(run_type, START, END, LATER)
        assert (start, mode) == (START, "incremental")
        assert end == LATER - timedelta(microseconds=456)  # floored to the millisecond
    # An asset event alone carries no data interval: still a valid, tiny interval.
    start, end, _ = changes_plan.run_interval("asset_triggered", None, None, LATER)
    assert end - start == timedelta(milliseconds=1)


def test_config_round_trips_through_its_environment(tmp_path: Path) -> None:
    config = PipelineConfig(
        contact_points=("10.0.0.1", "10.0.0.2"),
        port=19042,
        source_mode=SourceMode.TABLETS,
        source_keyspace_prefix="",
        clock_source="cql",
        target_keyspace="cdc_target",
        lake_path=tmp_path / "lake",
        report_dir=tmp_path / "reports",
        ring_delay=timedelta(seconds=2.5),
        generation_leeway=timedelta(milliseconds=800),
        confidence_window=timedelta(seconds=3),
        clock_wait_timeout=timedelta(minutes=2),
        publish_concurrency=7,
    )
    assert PipelineConfig.from_env(config.to_env()) == config


def test_plan_gives_each_table_its_window_end_and_spark_job(tmp_path: Path) -> None:
    config = PipelineConfig(report_dir=tmp_path / "reports", target_keyspace="tgt")
    planned = changes_plan.plan(
        config,
        run_type="scheduled",
        interval_start=START,
        interval_end=END,
        run_after=LATER,
        run_id="scheduled__2026-11-22T10:15:00+00:00",
        dag_id="cdc_changes",
        tables="shop.orders, shop.items,shop.orders",
    )
    assert [p["table"] for p in planned] == ["shop.items", "shop.orders"]
    first = planned[0]
    assert first["window_end_ms"] == int(END.timestamp() * 1000)
    args = dict(zip(first["spark_args"][::2], first["spark_args"][1::2], strict=True))
    assert args["--table"] == "shop.items" and args["--mode"] == "incremental"
    assert args["--interval-start"] == START.isoformat()
    assert args["--interval-end"] == END.isoformat()
    assert Path(args["--output"]) == changes_plan.result_path(
        config.report_dir, args["--run-id"], "shop.items"
    )
    assert ":" not in Path(args["--output"]).parent.name  # a file-system-safe run folder
    assert first["env_vars"]["CDCGEN_TARGET_KEYSPACE"] == "tgt"
    with pytest.raises(ValueError, match="keyspace"):
        changes_plan.plan(
            config,
            run_type="manual",
            interval_start=START,
            interval_end=END,
            run_after=LATER,
            run_id="r",
            dag_id="d",
            tables="no_dot_here",
        )


def test_a_follow_reads_from_its_interval_start_until_the_plan_plus_its_length(
    tmp_path: Path,
) -> None:
    config = PipelineConfig(report_dir=tmp_path / "reports")
    before = datetime.now(UTC)
    planned = changes_plan.plan(
        config, run_type="scheduled", interval_start=START, interval_end=END, run_after=LATER,
        run_id="r", dag_id="d", tables="shop.orders", follow=timedelta(minutes=14),
    )  # fmt: skip
    args = dict(zip(planned[0]["spark_args"][::2], planned[0]["spark_args"][1::2], strict=True))
    assert "--interval-end" not in args
    assert args["--interval-start"] == START.isoformat()
    until = datetime.fromisoformat(args["--follow-until"])
    assert before + timedelta(minutes=14) - timedelta(seconds=1) <= until
    assert until <= datetime.now(UTC) + timedelta(minutes=14)
    # Its wait is for the interval's start only: the follow waits for each window itself.
    assert planned[0]["window_end_ms"] == int(START.timestamp() * 1000)
    with pytest.raises(changes_plan.BackfillNotFollowed, match="backfill"):
        changes_plan.plan(
            config, run_type="backfill", interval_start=START, interval_end=END,
            run_after=LATER, run_id="r", dag_id="d", tables="shop.orders",
            follow=timedelta(minutes=14),
        )  # fmt: skip


def _result(config: PipelineConfig, run_id: str, table: str, **fields: object) -> None:
    path = changes_plan.result_path(config.report_dir, run_id, table)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"table": table, **fields}))


def test_summary_counts_rows_and_names_every_problem(tmp_path: Path) -> None:
    config = PipelineConfig(report_dir=tmp_path)
    ok_checks = {"passed": True, "checks": [{"check": "change in its key's stream (colocation)",
                                             "passed": True}]}  # fmt: skip
    bad_checks = {"passed": False, "failed": ["colocation: 3 offending row(s)"],
                  "checks": [{"check": "change in its key's stream (colocation)",
                              "passed": False}]}  # fmt: skip
    window = [{"generation": "g"}]
    _result(config, "r1", "ks.a", status="done", rows_written=10, windows=window,
            checks=ok_checks, watermark="2026-11-22T10:15:00+00:00")  # fmt: skip
    _result(config, "r1", "ks.b", status="row checks failed", rows_written=5, windows=window,
            checks=bad_checks, error="colocation failed")  # fmt: skip
    planned = [{"table": t} for t in ("ks.a", "ks.b", "ks.c")]
    summary = changes_plan.changes_run_summary(config, "r1", planned)
    assert summary.changes_rows == 15
    assert summary.colocation == "failed" and summary.checks == "failed"
    assert summary.status == "failed"
    assert [p.split(":")[0] for p in summary.problems] == ["ks.b", "ks.c"]
    assert "not extracted" in summary.problems[1]
    assert summary.watermarks["ks.a"] == "2026-11-22T10:15:00+00:00"
    written = json.loads(
        (tmp_path / changes_plan.SUMMARIES_DIR / f"{file_name('r1')}.json").read_text()
    )
    assert written == summary.to_json()

    passing = changes_plan.changes_run_summary(config, "r1", planned[:1])
    assert (passing.colocation, passing.status, passing.problems) == ("passed", "ok", ())
    # Nothing new to read: no window, no check run; still a success.
    _result(config, "r2", "ks.a", status="done", rows_written=0, windows=[])
    idle = changes_plan.changes_run_summary(config, "r2", planned[:1])
    assert (idle.colocation, idle.status) == ("none", "ok")


def test_a_follow_killed_between_cycles_fails_the_summary_saying_what_it_did(
    tmp_path: Path,
) -> None:
    from cdcgen.core.changes_result import ChangesRunResult, CycleEntry
    from cdcgen.core.changes_status import ChangesRunStatus
    from cdcgen.jobs import extract_changes

    config = PipelineConfig(report_dir=tmp_path)
    path = changes_plan.result_path(config.report_dir, "r3", "ks.a")
    path.parent.mkdir(parents=True)
    cycle = CycleEntry(number=1, closed_until=END.isoformat(), finished_at=LATER.isoformat(),
                       rows=7, watermark=END.isoformat())  # fmt: skip
    so_far = ChangesRunResult(table="ks.a", rows_written=7, watermark=END.isoformat(),
                              cycles=(cycle,))  # fmt: skip
    extract_changes._keep_following(path, [], so_far)
    summary = changes_plan.changes_run_summary(config, "r3", [{"table": "ks.a"}])
    assert summary.status == "failed" and summary.changes_rows == 7
    assert summary.problems == (f"ks.a: {ChangesRunStatus.FOLLOWING}",)
    assert summary.watermarks["ks.a"] == END.isoformat()


def test_the_job_follows_or_reads_one_interval_never_both_undefined() -> None:
    from cdcgen.jobs.extract_changes import parse_args

    base = ["--table", "ks.t", "--interval-start", START.isoformat()]
    following = parse_args([*base, "--follow-until", END.isoformat(), "--every", "5"])
    assert following.interval_end is None and following.every == 5.0
    for wrong in (
        base,
        [*base, "--follow-until", END.isoformat(), "--mode", "backfill"],
        [*base, "--follow-until", END.isoformat(), "--every", "0"],
    ):
        with pytest.raises(SystemExit):
            parse_args(wrong)


def test_a_table_s_summary_is_derived_from_its_outcome() -> None:
    from cdcgen.core.changes_result import (
        ChangesRunResult,
        CheckEntry,
        PendingEntry,
        RowChecks,
        WindowEntry,
    )
    from cdcgen.core.changes_status import ChangesRunStatus

    checks = RowChecks(
        passed=False,
        data_docs="docs/index.html",
        checks=(CheckEntry(check="change in its key's stream (colocation)", passed=False),),
        failed=("colocation: 3 offending row(s)",),
    )
    outcome = ChangesRunResult(
        table="ks.a", rows_written=5, windows=(WindowEntry(), WindowEntry()),
        pending=(PendingEntry(),), watermark=END.isoformat(), lake_versions=(7, 8),
        report="reports/changes.html",
    ).checked(checks)  # fmt: skip
    assert changes_plan.table_summary(outcome) == {
        "status": "row checks failed",
        "rows": 5,
        "windows": 2,
        "pending": 1,
        "watermark": END.isoformat(),
        "lake_versions": [7, 8],
        "colocation": "failed",
        "checks": False,
        "failed_checks": ["colocation: 3 offending row(s)"],
        "report": "reports/changes.html",
        "data_docs": "docs/index.html",
    }
    unchecked = changes_plan.table_summary(ChangesRunResult(rows_written=1))
    assert unchecked["status"] == "done" and unchecked["checks"] is None
    assert (unchecked["colocation"], unchecked["failed_checks"]) == (None, [])
    missing = ChangesRunResult(table="ks.b", status=ChangesRunStatus.NOT_EXTRACTED)
    assert changes_plan.table_summary(missing) == {"status": "not extracted"}


def test_a_result_with_a_status_this_version_does_not_know_fails_the_run_naming_it(
    tmp_path: Path,
) -> None:
    config = PipelineConfig(report_dir=tmp_path)
    _result(config, "r4", "ks.a", status="exploded", error="boom", rows_written=2)
    summary = changes_plan.changes_run_summary(config, "r4", [{"table": "ks.a"}])
    assert summary.status == "failed" and summary.problems == ("ks.a: exploded: boom",)
    assert summary.to_json()["tables"]["ks.a"]["status"] == "exploded"
