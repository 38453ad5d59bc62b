"""Which generations a run handles and in which order they go public (pure rules)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from cdcgen.core.generation import Generation
from cdcgen.core.publication import (
    Reason,
    Selection,
    publication_plan,
    select_generations,
)
from cdcgen.core.time import to_millis

T0 = datetime(2026, 11, 1, 12, 0, tzinfo=UTC)
GENS = [Generation(T0 + timedelta(minutes=10 * i), f"gen-{i}") for i in range(4)]


def published(*indexes: int) -> set[Generation]:
    return {GENS[i] for i in indexes}


def reasons(selected: list[Selection]) -> list[tuple[str, str]]:
    return [(s.generation.id, str(s.reason)) for s in selected]


def test_every_unpublished_generation_oldest_first() -> None:
    chosen = select_generations(reversed(GENS), published(0, 2))
    assert reasons(chosen) == [("gen-1", "unpublished"), ("gen-3", "unpublished")]


def test_backfill_redoes_published_generations_in_its_interval() -> None:
    # [T0+10min, T0+30min): gen-1 and gen-2, end exclusive.
    interval = (T0 + timedelta(minutes=10), T0 + timedelta(minutes=30))
    chosen = select_generations(GENS, published(0, 1, 2, 3), interval)
    assert reasons(chosen) == [("gen-1", "in_interval"), ("gen-2", "in_interval")]


def test_force_republishes_everything_in_scope() -> None:
    chosen = select_generations(GENS, published(0, 1, 2, 3), force=True)
    assert [s.reason for s in chosen] == [Reason.FORCED] * 4


@pytest.mark.parametrize(
    "wanted",
    [
        "gen-2",
        str(to_millis(GENS[2].timestamp)),
        "2026-11-01T12:20:00Z",
        "2026-11-01T12:20:00+00:00",
    ],
)
def test_generation_id_narrows_the_scope(wanted: str) -> None:
    assert reasons(select_generations(GENS, published(), generation_id=wanted)) == [
        ("gen-2", "unpublished")
    ]
    # Already published: only with force.
    assert select_generations(GENS, published(2), generation_id=wanted) == []
    forced = select_generations(GENS, published(2), generation_id=wanted, force=True)
    assert reasons(forced) == [("gen-2", "forced")]


def test_unknown_generation_id_is_an_error_not_a_no_op() -> None:
    with pytest.raises(LookupError, match="gen-9"):
        select_generations(GENS, published(), generation_id="gen-9")


def test_a_generation_is_keyed_by_its_lane_and_millisecond() -> None:
    moment = T0 + timedelta(milliseconds=7)
    assert Generation(moment, "g").key == ("", to_millis(T0) + 7)
    assert Generation(moment, "g", "shop.orders").key == ("shop.orders", to_millis(T0) + 7)
    assert Generation(moment, "g").iso == "2026-11-01T12:00:00.007+00:00"


# --- publication order ----------------------------------------------------------------


def _plan(
    detected: list[Generation],
    verdicts: dict[Generation, bool],
    unpublished: list[Generation] | None = None,
    published: list[Generation] | None = None,
) -> list[tuple[str, str | None]]:
    plan = publication_plan(detected, verdicts, unpublished or [], published or [])
    return [(step.generation.id, step.held_back) for step in plan]


def test_generations_are_published_oldest_first() -> None:
    detected = list(reversed(GENS[:3]))
    plan = _plan(detected, {g: True for g in detected})
    assert plan == [("gen-0", None), ("gen-1", None), ("gen-2", None)]


def test_a_rejected_generation_holds_back_every_newer_one() -> None:
    detected = GENS[:3]
    plan = _plan(detected, {GENS[0]: True, GENS[1]: False, GENS[2]: True})
    assert plan[0] == ("gen-0", None)
    assert plan[1] == ("gen-1", "it failed validation")
    assert plan[2][0] == "gen-2" and "older generation 2026-11-01T12:10:00.000+00:00" in (
        plan[2][1] or ""
    )


def test_a_generation_never_validated_holds_back_every_newer_one() -> None:
    plan = _plan(GENS[:2], {GENS[1]: True})
    assert plan[0] == ("gen-0", "it was never validated (its wait or extract failed)")
    assert plan[1][1] is not None and "gen-0" not in plan[1][1]  # named by its time


def test_an_older_unpublished_generation_outside_the_run_holds_back() -> None:
    # Only gen-2 is in this run (e.g. generation_id given); gen-1 is committed, unpublished.
    plan = _plan([GENS[2]], {GENS[2]: True}, [GENS[1], GENS[2]])
    assert plan == [("gen-2", "older generation 2026-11-01T12:10:00.000+00:00 is not published")]


def test_a_generation_already_past_goes_out_once_validated() -> None:
    # Detected long after its timestamp (the pipeline was down): nothing to wait for in
    # the plan; consumers read its streams from its own timestamp.
    late = Generation((datetime.now(UTC) - timedelta(days=1)).replace(microsecond=0), "late")
    assert _plan([late], {late: True}, [late], [GENS[0]]) == [("late", None)]


def test_a_generation_older_than_a_published_one_is_never_published() -> None:
    # gen-1 was committed after gen-2 went public: consumers following gen-2 only look
    # for later timestamps, so gen-1 would never be read; it holds back its lane.
    plan = _plan([GENS[1], GENS[3]], {GENS[1]: True, GENS[3]: True}, GENS[1:2], [GENS[0], GENS[2]])
    assert plan[0] == (
        "gen-1",
        "newer generation 2026-11-01T12:20:00.000+00:00 is already published: consumers "
        "only look for later timestamps and would never read this one",
    )
    assert plan[1][0] == "gen-3" and "older generation 2026-11-01T12:10:00.000" in (
        plan[1][1] or ""
    )
    # A backfill re-publishing a generation already public is not held back by newer ones.
    assert _plan([GENS[1]], {GENS[1]: True}, [], GENS[:3]) == [("gen-1", None)]
    # Tablets lanes are independent: another table's newer set holds nothing back.
    other = Generation(GENS[3].timestamp, "gen-3", "ks.other")
    assert _plan([GENS[1]], {GENS[1]: True}, [GENS[1]], [other]) == [("gen-1", None)]


def test_tablets_tables_are_ordered_independently() -> None:
    a = Generation(GENS[0].timestamp, "gen-0", "ks.a")
    b = Generation(GENS[1].timestamp, "gen-1", "ks.b")
    assert _plan([b, a], {a: False, b: True}) == [
        ("gen-0", "it failed validation"),
        ("gen-1", None),
    ]


def test_tablets_sets_of_two_tables_in_one_millisecond_keep_their_own_verdicts() -> None:
    a = Generation(GENS[0].timestamp, "gen-0", "ks.a")
    b = Generation(GENS[0].timestamp, "log-b", "ks.b")
    assert _plan([a, b], {a: True, b: False}) == [
        ("gen-0", None),
        ("log-b", "it failed validation"),
    ]
