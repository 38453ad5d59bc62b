"""Which window of which streams to read next: closed windows only, never expired ones.

Pure planning, no I/O. For one CDC table, each generation ``g`` (a vnode generation, or
one stream set of a tablets table) operates in ``[T_g, T_next)``. For a run covering the
interval ``[a, b)`` a stream of ``g`` is read over

    [max(T_g, checkpoint of its bucket), min(T_next, b))

and only once every node's clock is at or past that end + leeway + confidence window: a
coordinator accepts writes up to ``leeway`` in its own future, and the confidence window
(30 s, like scylla-cdc-java/go/rust) covers writes still in flight. (Inside a generation
ScyllaDB also accepts writes whose client-chosen timestamp lies further in the past;
every windowed consumer misses those, this one included.)

Streams fall into a fixed number of *buckets* per generation (:mod:`.lake_buckets`). A
bucket is the unit the lake replaces and the unit a checkpoint covers: every stream of a
bucket is read over the same window, which starts at the bucket's checkpoint.
Checkpoints are written only after a window's files are committed, so files of a bucket
starting at or after its checkpoint were never acknowledged ("garbage" of a killed run)
and are deleted before the window is written again. That rule is what makes a resume
exact: nothing acknowledged is read twice into the lake, nothing unacknowledged is kept.

Tablets tables plug in unchanged: each stream set is a generation whose ``[T_set, T_next)``
bounds every stream in it, so a stream is never read before it opened or after it closed.

A window starting before ``now - CDC TTL`` would read rows ScyllaDB already dropped: that
raises :class:`DataExpired`, which says how to re-bootstrap.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from enum import StrEnum
from functools import cached_property

from cdcgen.core.cdc_log import TableRef
from cdcgen.core.clocks import ClockCheck, NodeClock, window_closes_at
from cdcgen.core.errors import DataExpired, LakeInconsistent
from cdcgen.core.lake_buckets import LakeBuckets
from cdcgen.core.log_ttls import LogTtls
from cdcgen.core.stream_id import StreamId
from cdcgen.core.tablets import TabletStreamSet
from cdcgen.core.time import as_utc, floor_ms, parse_time_label, time_label
from cdcgen.core.topology import TopologyDescription


class Mode(StrEnum):
    """``incremental`` follows checkpoints; ``backfill`` re-extracts a past interval."""

    INCREMENTAL = "incremental"
    BACKFILL = "backfill"


class WindowKind(StrEnum):
    NEW = "new"  # first extraction of this time range
    RESUME = "resume"  # replaces unacknowledged files of a killed run
    REPLACE = "replace"  # backfill: re-extracts an acknowledged window exactly


@dataclass(frozen=True)
class Interval:
    """The run's data interval ``[start, end)``, floored to milliseconds."""

    start: datetime
    end: datetime

    def __post_init__(self) -> None:
        object.__setattr__(self, "start", floor_ms(self.start))
        object.__setattr__(self, "end", floor_ms(self.end))
        if self.end <= self.start:
            raise ValueError(
                f"interval end {self.end.isoformat()} is not after its start "
                f"{self.start.isoformat()}"
            )


@dataclass(frozen=True, eq=False)
class GenerationSpan:
    """A generation as the planner sees it: ``[start, end)`` and the mapping that made it.

    ``mapping`` is a vnode generation's topology description or a tablets table's stream
    set; both answer "which stream does a token's write go to", which the row checks ask.
    """

    start: datetime
    end: datetime | None
    mapping: TopologyDescription | TabletStreamSet
    id: str = ""

    def __post_init__(self) -> None:
        object.__setattr__(self, "start", as_utc(self.start, "generation start"))
        if self.end is not None:
            object.__setattr__(self, "end", as_utc(self.end, "generation end"))
            if self.end <= self.start:
                raise ValueError(
                    f"generation {self.label} ends at {self.end.isoformat()}, not after its start"
                )

    @property
    def label(self) -> str:
        return time_label(self.start)

    @cached_property
    def streams(self) -> tuple[StreamId, ...]:
        if isinstance(self.mapping, TabletStreamSet):
            return self.mapping.streams
        return tuple(self.mapping.streams())

    def buckets(self, buckets: LakeBuckets) -> dict[int, tuple[StreamId, ...]]:
        """The generation's streams by lake bucket, empty buckets left out, streams
        unique and in order, buckets ascending. Computed once per rule: a run's plan and
        its watermark both ask, and grouping a large generation's streams takes time."""
        known = self._grouped.get(buckets)
        if known is None:
            grouped: dict[int, list[StreamId]] = {}
            for stream in dict.fromkeys(self.streams):
                grouped.setdefault(buckets.of(stream), []).append(stream)
            known = {bucket: tuple(grouped[bucket]) for bucket in sorted(grouped)}
            self._grouped[buckets] = known
        return known

    @cached_property
    def _grouped(self) -> dict[LakeBuckets, dict[int, tuple[StreamId, ...]]]:
        return {}

    @property
    def is_tablets(self) -> bool:
        return isinstance(self.mapping, TabletStreamSet)

    def get_stream(self, token: int) -> StreamId:
        return self.mapping.get_stream(token)


def generation_spans(
    generations: Iterable[tuple[datetime, TopologyDescription | TabletStreamSet, str]],
) -> list[GenerationSpan]:
    """Spans from ``(timestamp, mapping, id)`` triples: each ends where the next begins.

    Works for vnode generations (from a :class:`~cdcgen.core.timeline.GenerationTimeline`
    or a generation source) and for a tablets table's stream sets alike.
    """
    ordered = sorted(generations, key=lambda item: as_utc(item[0]))
    spans = []
    for i, (timestamp, mapping, ident) in enumerate(ordered):
        end = ordered[i + 1][0] if i + 1 < len(ordered) else None
        spans.append(GenerationSpan(timestamp, end, mapping, ident))
    return spans


def tablet_spans(sets: Sequence[TabletStreamSet]) -> list[GenerationSpan]:
    """A tablets table's stream sets as generations (each set is ``[T_set, T_next_set)``)."""
    return generation_spans((s.timestamp, s, "") for s in sets)


@dataclass(frozen=True, order=True)
class LakeWindow:
    """One window already in the lake: ``generation``/``window``/``bucket`` partitions."""

    generation: str
    start: datetime
    end: datetime
    bucket: int

    @property
    def label(self) -> str:
        return window_label(self.start, self.end)


def window_label(start: datetime, end: datetime) -> str:
    return f"{time_label(start)}_{time_label(end)}"


def parse_window_label(text: str) -> tuple[datetime, datetime]:
    start, sep, end = text.partition("_")
    if not sep:
        raise ValueError(f"{text!r} is not a window label like <start>_<end>")
    return parse_time_label(start), parse_time_label(end)


@dataclass(frozen=True, eq=False)
class Window:
    """Read ``streams`` (one bucket of ``generation``) over ``[start, end)``."""

    generation: GenerationSpan
    bucket: int
    start: datetime
    end: datetime
    streams: tuple[StreamId, ...]
    kind: WindowKind = WindowKind.NEW

    @property
    def label(self) -> str:
        return window_label(self.start, self.end)

    @property
    def lake_window(self) -> LakeWindow:
        return LakeWindow(self.generation.label, self.start, self.end, self.bucket)

    def __repr__(self) -> str:
        return (
            f"Window(generation={self.generation.label}, bucket={self.bucket}, "
            f"[{self.start.isoformat()}, {self.end.isoformat()}), {len(self.streams)} streams, "
            f"{self.kind.value})"
        )


@dataclass(frozen=True)
class PendingWindow:
    """A generation's window that is not closed yet; wait until ``closes_at``."""

    generation: str
    end: datetime
    closes_at: datetime
    reason: str


@dataclass(frozen=True)
class TableState:
    """What the checkpoint store knows about a table.

    ``checkpoints`` maps ``(generation start, bucket)`` to the time up to which every
    stream of that lake bucket is in the lake. ``started_at`` is where extraction began
    (the first run's interval start, or a re-bootstrap point); ``watermark`` is the
    consistency watermark. A bucket with no checkpoint is complete up to ``floor``: by
    definition of both.
    """

    started_at: datetime | None = None
    watermark: datetime | None = None
    checkpoints: Mapping[tuple[datetime, int], datetime] = field(default_factory=dict)
    #: The TTLs of the log rows after the watermark, as the runs recorded them; None
    #: before any run did (:mod:`cdcgen.core.log_ttls`).
    log_ttls: LogTtls | None = None

    @property
    def floor(self) -> datetime | None:
        known = [t for t in (self.started_at, self.watermark) if t is not None]
        return max(known) if known else None

    def checkpoint(self, generation: GenerationSpan, bucket: int, floor: datetime) -> datetime:
        """The effective checkpoint: never before the generation or the table's floor."""
        stored = self.checkpoints.get((generation.start, bucket))
        candidates = [generation.start, floor]
        if stored is not None:
            candidates.append(stored)
        return max(candidates)


@dataclass(frozen=True)
class WindowPolicy:
    """The rules windows obey: closing (leeway, confidence window), expiry (TTL), buckets."""

    leeway: timedelta = timedelta(seconds=5)
    confidence_window: timedelta = timedelta(seconds=30)
    ttl: timedelta | None = timedelta(seconds=86_400)
    expiry_margin: timedelta = timedelta(seconds=60)
    buckets: LakeBuckets = field(default_factory=LakeBuckets)

    def __post_init__(self) -> None:
        if self.ttl is not None and self.ttl <= timedelta(0):
            object.__setattr__(self, "ttl", None)  # CDC TTL 0 means rows never expire

    def closes_at(self, end: datetime) -> datetime:
        """When a window ending at ``end`` is closed, if every node's clock agrees."""
        return window_closes_at(end, self.leeway, self.confidence_window)


@dataclass(frozen=True)
class WindowPlan:
    windows: tuple[Window, ...]
    pending: tuple[PendingWindow, ...]
    garbage: tuple[LakeWindow, ...]
    floor: datetime
    first_run: bool

    @property
    def stream_reads(self) -> int:
        return sum(len(w.streams) for w in self.windows)


# The planning rules, applied to one table, its generations, its state and the node clocks.


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
