"""Which window of which streams to read next: the planning rules (pure, no I/O).

See :mod:`cdcgen.core.windows` for what a window is and why a bucket starts at its
checkpoint; this module applies those rules to one table, its generations, its
state and the node clocks.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime, timedelta

from cdcgen.core.cdc_log import TableRef
from cdcgen.core.clocks import ClockCheck, NodeClock
from cdcgen.core.stream_id import StreamId
from cdcgen.core.time import as_utc
from cdcgen.core.windows import (
    DataExpired,
    GenerationSpan,
    Interval,
    LakeInconsistent,
    LakeWindow,
    Mode,
    PendingWindow,
    TableState,
    Window,
    WindowKind,
    WindowPlan,
    WindowPolicy,
)


def rebootstrap_advice(table: TableRef) -> str:
    return (
        f"Re-bootstrap {table}: (1) pause the cdc_changes DAG for it; (2) snapshot the base "
        f"table {table} at a time S (a full read, e.g. Spark over token ranges, or "
        "`nodetool snapshot` + export) into the lake as its bootstrap; (3) move the table's "
        "consistency watermark to S with "
        "`cdcgen.adapters.checkpoints.CqlCheckpointStore.advance_watermark(table, S)`, after "
        "which every stream resumes from S; (4) resume the DAG, and keep it within the "
        "CDC TTL (or raise the TTL: ALTER TABLE ... WITH cdc = {'enabled': true, 'ttl': N})."
    )


def check_not_expired(
    table: TableRef,
    start: datetime,
    now: datetime,
    policy: WindowPolicy,
    mode: Mode = Mode.INCREMENTAL,
) -> None:
    """Raise :class:`DataExpired` if rows from ``start`` on may already be gone."""
    if policy.ttl is None:
        return
    oldest = as_utc(now) - policy.ttl + policy.expiry_margin
    if as_utc(start) >= oldest:
        return
    lost = as_utc(now) - policy.ttl - as_utc(start)
    head = (
        f"CDC data of {table} has expired: the window starting at {as_utc(start).isoformat()} "
        f"is older than now ({as_utc(now).isoformat()}) minus the CDC TTL ({policy.ttl}) "
        f"minus a {policy.expiry_margin} safety margin"
    )
    if lost > timedelta(0):
        head += f"; up to {lost} of changes are no longer in {table.qualified_log}"
    if mode is Mode.BACKFILL:
        raise DataExpired(
            head + ". A backfill can only re-extract what the log still holds: shorten "
            "the backfill interval to after the TTL horizon, or restore this range from "
            "a snapshot instead."
        )
    raise DataExpired(
        head + ". Continuing would silently skip those changes. " + rebootstrap_advice(table)
    )


def _lake_index(
    existing: Iterable[LakeWindow],
) -> dict[tuple[str, int], list[LakeWindow]]:
    index: dict[tuple[str, int], list[LakeWindow]] = {}
    for window in existing:
        index.setdefault((window.generation, window.bucket), []).append(window)
    for windows in index.values():
        windows.sort()
    return index


def plan_windows(
    table: TableRef,
    generations: Sequence[GenerationSpan],
    interval: Interval,
    state: TableState,
    clocks: Sequence[NodeClock],
    policy: WindowPolicy,
    now: datetime,
    existing: Iterable[LakeWindow] = (),
    mode: Mode = Mode.INCREMENTAL,
) -> WindowPlan:
    """The windows to extract now, the ones to wait for, and the lake files to drop first.

    ``existing`` lists the windows already in the lake (:meth:`cdcgen.ports.ChangesLake.windows`).
    Incremental mode reads each bucket from its checkpoint to
    ``min(T_next, interval end)``; backfill mode re-extracts, exactly, the acknowledged
    windows overlapping the interval and fills the interval's acknowledged gaps.
    """
    first_run = state.floor is None
    floor = state.floor if state.floor is not None else interval.start
    lake = _lake_index(existing)
    windows: list[Window] = []
    pending: list[PendingWindow] = []
    garbage: list[LakeWindow] = []
    for generation in sorted(generations, key=lambda g: g.start):
        if generation.end is not None and generation.end <= floor and mode is Mode.INCREMENTAL:
            continue  # complete by the floor's definition
        if generation.start >= interval.end:
            continue  # operates after this interval
        end = interval.end if generation.end is None else min(generation.end, interval.end)
        buckets = generation.buckets(policy.buckets)
        starts = {bucket: state.checkpoint(generation, bucket, floor) for bucket in buckets}
        if mode is Mode.INCREMENTAL and all(start >= end for start in starts.values()):
            continue
        why_open = ClockCheck(policy.closes_at(end), tuple(clocks)).why_not()
        if why_open is not None:
            pending.append(PendingWindow(generation.label, end, policy.closes_at(end), why_open))
            continue
        for bucket, streams in buckets.items():
            acknowledged = starts[bucket]
            in_lake = lake.get((generation.label, bucket), [])
            for window in in_lake:
                if window.start < acknowledged < window.end:
                    raise LakeInconsistent(
                        f"{table}: lake window {window.label} (generation {generation.label}, "
                        f"bucket {bucket}) straddles the bucket's checkpoint "
                        f"{acknowledged.isoformat()}; checkpoints and lake disagree: inspect "
                        "the state table and the lake before re-running"
                    )
            if mode is Mode.INCREMENTAL:
                if acknowledged >= end:
                    continue
                stale = [w for w in in_lake if w.start >= acknowledged]
                garbage.extend(stale)
                check_not_expired(table, acknowledged, now, policy, mode)
                kind = WindowKind.RESUME if stale else WindowKind.NEW
                windows.append(Window(generation, bucket, acknowledged, end, streams, kind))
            else:
                windows.extend(
                    _backfill_windows(
                        table, generation, bucket, streams, interval, acknowledged, in_lake,
                        now, policy,
                    )
                )  # fmt: skip
    return WindowPlan(tuple(windows), tuple(pending), tuple(garbage), floor, first_run)


def _backfill_windows(
    table: TableRef,
    generation: GenerationSpan,
    bucket: int,
    streams: tuple[StreamId, ...],
    interval: Interval,
    acknowledged: datetime,
    in_lake: Sequence[LakeWindow],
    now: datetime,
    policy: WindowPolicy,
) -> list[Window]:
    """Existing acknowledged windows overlapping the interval, plus its uncovered gaps."""
    low = max(generation.start, interval.start)
    high = min(interval.end, acknowledged)
    if generation.end is not None:
        high = min(high, generation.end)
    if low >= high:
        return []
    result: list[Window] = []
    cursor = low
    for lake_window in in_lake:  # sorted by start
        if lake_window.end <= low or lake_window.start >= high:
            continue
        if lake_window.start > cursor:
            result.append(Window(generation, bucket, cursor, lake_window.start, streams))
        result.append(
            Window(
                generation, bucket, lake_window.start, lake_window.end, streams,
                WindowKind.REPLACE,
            )
        )  # fmt: skip
        cursor = max(cursor, lake_window.end)
    if cursor < high:
        result.append(Window(generation, bucket, cursor, high, streams))
    for window in result:
        check_not_expired(table, window.start, now, policy, Mode.BACKFILL)
    return result
