"""Which generations a run handles, and in which order they may go public (pure rules).

Consumers (scylla-cdc-java/go/rust) move from a generation to the next timestamp they see
in ``cdc_generation_timestamps``: publish a newer generation while an older one is missing
and they skip the older one for good. So generations go out in timestamp order, per lane
(the cluster for vnode generations, each table for tablets stream sets), and the first one
that cannot be published holds back every newer one of its lane.

A generation whose timestamp is already past when it is detected (the pipeline was down,
or a node committed it late) goes out as soon as it is validated: the wait finds every
clock past it at once, and consumers read a new generation's streams from its own
timestamp, never from "now", so its changes are all read. One older than a generation
already published is never published: consumers look only for timestamps after the one
they follow (``time > ?``), so they would never read it; it holds back its lane, by name.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum

from cdcgen.core.generation import Generation
from cdcgen.core.time import as_utc, iso_millis


class Reason(StrEnum):
    """Why a run handles a generation."""

    UNPUBLISHED = "unpublished"
    IN_INTERVAL = "in_interval"  # a backfill re-does its data interval
    FORCED = "forced"


@dataclass(frozen=True)
class Selection:
    generation: Generation
    reason: Reason


def select_generations(
    committed: Iterable[Generation],
    published: Collection[Generation],
    interval: tuple[datetime, datetime] | None = None,
    *,
    generation_id: str | None = None,
    force: bool = False,
) -> list[Selection]:
    """Which committed generations a run handles, oldest first.

    Every generation not yet published; plus every one whose timestamp falls in the
    run's data ``interval`` ``[start, end)`` (a backfill re-does its interval,
    idempotently); plus, with ``force``, every one in scope. ``generation_id`` narrows the
    scope to one generation (matched by source id, ISO timestamp or milliseconds) and is
    an error when nothing matches: a typo must not turn into a silent no-op.
    """
    candidates = sorted(committed)
    if generation_id:
        candidates = [g for g in candidates if g.matches(generation_id)]
        if not candidates:
            raise LookupError(f"no committed generation matches generation_id={generation_id!r}")
    chosen = []
    for generation in candidates:
        if generation not in published:
            chosen.append(Selection(generation, Reason.UNPUBLISHED))
        elif interval is not None and (
            as_utc(interval[0]) <= generation.timestamp < as_utc(interval[1])
        ):
            chosen.append(Selection(generation, Reason.IN_INTERVAL))
        elif force:
            chosen.append(Selection(generation, Reason.FORCED))
    return chosen


@dataclass(frozen=True)
class PublicationStep:
    """One generation of the run: published now, or held back and why."""

    generation: Generation
    held_back: str | None = None

    @property
    def goes_out(self) -> bool:
        return self.held_back is None


def publication_plan(
    detected: Sequence[Generation],
    validated: Mapping[Generation, bool],
    unpublished: Iterable[Generation],
    published: Iterable[Generation] = (),
) -> list[PublicationStep]:
    """The run's generations in publication order, each to publish or hold back.

    ``validated`` maps each generation that reached validation to its verdict (missing: its
    wait or extract failed); ``unpublished`` are the committed generations not yet in the
    target, this run's and others; ``published`` those already in it.
    """
    in_run = set(detected)
    older_elsewhere = [g for g in unpublished if g not in in_run]
    public = set(published)
    newest: dict[str, Generation] = {}
    for generation in public:
        if generation.table not in newest or newest[generation.table] < generation:
            newest[generation.table] = generation
    plan: list[PublicationStep] = []
    blocked: dict[str, str] = {}  # lane -> why its newer generations wait
    for generation in sorted(detected, key=lambda g: g.key):
        lane = generation.table
        older = sorted(g for g in older_elsewhere if g.table == lane and g < generation)
        verdict = validated.get(generation)
        overtaken = generation not in public and lane in newest and generation < newest[lane]
        if lane in blocked:
            reason: str | None = blocked[lane]
        elif overtaken:
            reason = (
                f"newer generation {iso_millis(newest[lane].timestamp)} is already published: "
                "consumers only look for later timestamps and would never read this one"
            )
        elif older:
            reason = f"older generation {iso_millis(older[0].timestamp)} is not published"
        elif verdict is None:
            reason = "it was never validated (its wait or extract failed)"
        elif not verdict:
            reason = "it failed validation"
        else:
            reason = None
        plan.append(PublicationStep(generation, reason))
        if reason is not None:
            blocked.setdefault(lane, f"older generation {generation.iso}: {reason}")
    return plan
