"""Which generations a run handles, and what its summary says (pure functions, no I/O)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from cdcgen.config import PipelineConfig
from cdcgen.pipeline.generations import (
    expand_kwargs,
    generation_record,
    publication_plan,
    select_generations,
    spark_args,
    summarize,
    to_millis,
)
from cdcgen.ports import GenerationRef

T0 = datetime(2026, 11, 1, 12, 0, tzinfo=UTC)
REFS = [GenerationRef(T0 + timedelta(minutes=10 * i), f"gen-{i}") for i in range(4)]


def published(*indexes: int):  # type: ignore[no-untyped-def]
    done = {to_millis(REFS[i].timestamp) for i in indexes}
    return lambda ref: to_millis(ref.timestamp) in done


def reasons(selected):  # type: ignore[no-untyped-def]
    return [(s.ref.id, s.reason) for s in selected]


def test_every_unpublished_generation_oldest_first() -> None:
    chosen = select_generations(reversed(REFS), published(0, 2), None, None)
    assert reasons(chosen) == [("gen-1", "unpublished"), ("gen-3", "unpublished")]


def test_backfill_redoes_published_generations_in_its_interval() -> None:
    # [T0+10min, T0+30min): gen-1 and gen-2, end exclusive.
    start, end = T0 + timedelta(minutes=10), T0 + timedelta(minutes=30)
    chosen = select_generations(REFS, published(0, 1, 2, 3), start, end)
    assert reasons(chosen) == [("gen-1", "in_interval"), ("gen-2", "in_interval")]


def test_force_republishes_everything_in_scope() -> None:
    chosen = select_generations(REFS, published(0, 1, 2, 3), None, None, force=True)
    assert [r for _, r in reasons(chosen)] == ["forced"] * 4


@pytest.mark.parametrize(
    "wanted",
    [
        "gen-2",
        str(to_millis(REFS[2].timestamp)),
        "2026-11-01T12:20:00Z",
        "2026-11-01T12:20:00+00:00",
    ],
)
def test_generation_id_narrows_the_scope(wanted: str) -> None:
    assert reasons(select_generations(REFS, published(), None, None, generation_id=wanted)) == [
        ("gen-2", "unpublished")
    ]
    # Already published: only with force.
    assert select_generations(REFS, published(2), None, None, generation_id=wanted) == []
    forced = select_generations(REFS, published(2), None, None, generation_id=wanted, force=True)
    assert reasons(forced) == [("gen-2", "forced")]


def test_unknown_generation_id_is_an_error_not_a_no_op() -> None:
    with pytest.raises(LookupError, match="gen-9"):
        select_generations(REFS, published(), None, None, generation_id="gen-9")


def test_generation_record_is_json_and_round_trips_the_timestamp() -> None:
    record = generation_record(GenerationRef(T0 + timedelta(milliseconds=7), "g"), "unpublished")
    assert record == {
        "id": "g",
        "timestamp_ms": to_millis(T0) + 7,
        "timestamp": "2026-11-01T12:00:00.007+00:00",
        "reason": "unpublished",
    }
    tablets = generation_record(REFS[0], "unpublished", table="shop.orders")
    assert tablets["table"] == "shop.orders"


def test_spark_args_carry_the_source_not_the_description() -> None:
    config = PipelineConfig(contact_points=("10.0.0.1", "10.0.0.2"), source_keyspace_prefix="x_")
    generation = generation_record(REFS[1], "unpublished")
    args = spark_args(config, generation)
    pairs = dict(zip(args[::2], args[1::2], strict=True))
    assert pairs["--generation-ts-ms"] == str(generation["timestamp_ms"])
    assert pairs["--generation-id"] == "gen-1"
    assert pairs["--contact-points"] == "10.0.0.1,10.0.0.2"
    assert pairs["--source-keyspace-prefix"] == "x_"
    assert expand_kwargs(config, [generation]) == [{"generation": generation, "spark_args": args}]


def _validation(i: int, passed: bool, table: str | None = None) -> dict:  # type: ignore[type-arg]
    return {
        "generation": generation_record(REFS[i], "unpublished", table),
        "passed": passed,
        "report": f"/r/generation_ts={i}/index.html",
    }


def _published(i: int, streams: int) -> dict:  # type: ignore[type-arg]
    return {"generation": generation_record(REFS[i], "unpublished"), "streams": streams}


def test_summary_of_a_clean_run() -> None:
    detected = [generation_record(r, "unpublished") for r in REFS[:2]]
    summary = summarize(
        detected,
        [_published(0, 10), _published(1, 12)],
        [_validation(0, True), _validation(1, True)],
    )
    assert summary["validation"] == "passed"
    assert summary["generations_published"] == 2 and summary["streams_published"] == 22
    assert summary["report"] == "/r/generation_ts=0/index.html"


def test_summary_names_rejected_and_never_validated_generations() -> None:
    detected = [generation_record(r, "unpublished") for r in REFS[:3]]
    summary = summarize(
        detected, [_published(0, 10)], [_validation(0, True), _validation(1, False)]
    )
    assert summary["validation"] == "failed"
    assert summary["rejected"] == [detected[1]["timestamp"]]
    assert summary["not_validated"] == [detected[2]["timestamp"]]
    assert summarize([], [], [])["validation"] == "none"


# --- publication order ----------------------------------------------------------------


def _plan(detected, validations, unpublished=None):  # type: ignore[no-untyped-def]
    return [
        (g["id"], reason)
        for g, _, reason in publication_plan(detected, validations, unpublished or {})
    ]


def test_generations_are_published_oldest_first() -> None:
    detected = [generation_record(r, "unpublished") for r in reversed(REFS[:3])]
    plan = _plan(detected, [_validation(i, True) for i in range(3)])
    assert plan == [("gen-0", None), ("gen-1", None), ("gen-2", None)]


def test_a_rejected_generation_holds_back_every_newer_one() -> None:
    detected = [generation_record(r, "unpublished") for r in REFS[:3]]
    plan = _plan(detected, [_validation(0, True), _validation(1, False), _validation(2, True)])
    assert plan[0] == ("gen-0", None)
    assert plan[1] == ("gen-1", "it failed validation")
    assert plan[2][0] == "gen-2" and "older generation 2026-11-01T12:10:00.000+00:00" in plan[2][1]


def test_an_older_unpublished_generation_outside_the_run_holds_back() -> None:
    # Only gen-2 is in this run (e.g. generation_id given); gen-1 is committed, unpublished.
    detected = [generation_record(REFS[2], "unpublished")]
    older = {"": [to_millis(REFS[1].timestamp), to_millis(REFS[2].timestamp)]}
    plan = _plan(detected, [_validation(2, True)], older)
    assert plan == [("gen-2", "older generation 2026-11-01T12:10:00+00:00 is not published")]


def test_tablets_tables_are_ordered_independently() -> None:
    a = generation_record(REFS[0], "unpublished", table="ks.a")
    b = generation_record(REFS[1], "unpublished", table="ks.b")
    plan = _plan([b, a], [_validation(0, False, "ks.a"), _validation(1, True, "ks.b")])
    assert plan == [("gen-0", "it failed validation"), ("gen-1", None)]


def test_tablets_sets_of_two_tables_in_one_millisecond_keep_their_own_verdicts() -> None:
    a = generation_record(REFS[0], "unpublished", table="ks.a")
    b = {**generation_record(REFS[0], "unpublished", table="ks.b"), "id": "log-b"}
    failed_b = {**_validation(0, False, "ks.b"), "generation": b}
    plan = _plan([a, b], [_validation(0, True, "ks.a"), failed_b])
    assert plan == [("gen-0", None), ("log-b", "it failed validation")]
