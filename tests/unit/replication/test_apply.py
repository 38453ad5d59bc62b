"""The apply's decisions, on fakes of its ports (``cdcgen.replication.apply``): the order a
key's changes reach the sink, CDC batches kept whole, refusals named and recorded, the
consistency point moved only once a slice is acknowledged, and a killed run resumed."""

from __future__ import annotations

from collections import Counter
from datetime import timedelta

import pyarrow as pa
import pytest
from changes_fakes import InjectedFault
from replication_fakes import (
    SINK,
    SOURCE,
    Events,
    LogRows,
    MemoryLake,
    MemorySinkState,
    MemorySinkWrites,
    Sent,
    at,
    micros,
)

from cdcgen.core.cdc_log import Operation, deleted_column, deleted_elements_column
from cdcgen.core.replication_plan import ApplyPlan
from cdcgen.core.time import to_micros
from cdcgen.replication.apply import GROUP_BATCHES, REJECTS_KEPT, SinkApplier
from cdcgen.replication.settings import ReplicationSettings
from cdcgen.replication.sink_schema import sink_shape
from unit.table_definitions import definition

SHAPE = sink_shape(
    definition(SOURCE, v="text", tags="set<text>"),
    SINK,
    definition(SINK, v="text", tags="set<text>"),
)
SETTINGS = ReplicationSettings(chunk_rows=50, request_batches=8)


class World:
    """One table's lake rows, its sink's writes and state, and an applier between."""

    def __init__(self, rows: LogRows, *, edges: tuple[float, ...] = (), **writes: object) -> None:
        self.events = Events()
        self.lake = MemoryLake(self.events, [at(e) for e in edges])
        self.lake.put(SOURCE, rows.table())
        self.writes = MemorySinkWrites(self.events, **writes)  # type: ignore[arg-type]
        self.state = MemorySinkState(self.events)

    def apply(
        self,
        since: float = 0,
        until: float = 1_000,
        settings: ReplicationSettings = SETTINGS,
        **options: object,
    ) -> tuple[SinkApplier, object]:
        applier = SinkApplier(self.writes, SHAPE, self.state, "run", settings, **options)  # type: ignore[arg-type]
        return applier, applier.apply(self.lake, ApplyPlan(at(since), at(until), 7))


def updates(sent: list[Sent]) -> list[tuple[int, int, str]]:
    """``(write time, pk, v)`` of every ``v`` update sent, in the order sent."""
    found = []
    for request in sent:
        for statement in request.statements:
            if statement.cql.startswith("UPDATE") and '"v" = ?' in statement.cql:
                written, value, pk, _ = statement.values
                found.append((written, pk, value))
    return found


def test_each_keys_changes_reach_the_sink_in_time_order_one_request_at_a_time() -> None:
    rows = LogRows()
    for second in range(60):
        rows.update(at(second), pk=second % 3, ck=1, v=f"v{second}", stream=1 + second % 2)
    world = World(rows)
    world.apply()
    sent = updates(world.writes.sent)
    assert len(sent) == 60
    for pk in range(3):
        times = [written for written, key, _ in sent if key == pk]
        assert times == sorted(times) and len(times) == 20
    for call in world.writes.calls:  # never two requests of one key in flight at once
        keys = [{pk for _, pk, _ in updates([request])} for request in call]
        assert sum(len(k) for k in keys) == len(set().union(*keys))
    for request in world.writes.sent:  # one key's group alone may exceed the request bound
        keys = {pk for _, pk, _ in updates([request])}
        bound = GROUP_BATCHES if len(keys) == 1 else SETTINGS.request_batches
        assert len(request.batches) <= bound


def test_a_cdc_batch_travels_whole_in_one_request() -> None:
    rows = LogRows()
    for second in range(12):
        rows.batch(
            at(second),
            {"pk": second, "ck": 1, "tags": ["a"], deleted_elements_column("tags"): ["b"]},
            {"op": Operation.ROW_DELETE, "pk": second, "ck": 2},
        )
    world = World(rows)
    world.apply()
    batches = [batch for request in world.writes.sent for batch in request.batches]
    assert len(batches) == 12
    for batch in batches:  # the added, the removed elements and the delete of one batch
        assert [s.cql.split()[0] for s in batch] == ["UPDATE", "UPDATE", "DELETE"]
        assert len({s.values[0] for s in batch}) == 1  # one write time


def test_a_change_the_rules_refuse_is_recorded_and_the_run_goes_on() -> None:
    rows = LogRows()
    rows.update(at(1), pk=1, ck=1, v="kept")
    bad = rows.batch(at(2), {"op": Operation.RANGE_DELETE_END_INCLUSIVE, "pk": 2})  # unpaired
    rows.update(at(3), pk=3, ck=1, v="kept too")
    world = World(rows)
    _, outcome = world.apply()
    assert [v for _, _, v in updates(world.writes.sent)] == ["kept", "kept too"]
    ((change, reason, run_id),) = world.state.rejected
    assert change.cdc_time == bad and run_id == "run"
    assert change.write_time_us == micros(2) and change.batch_seq_no == 0
    assert outcome.rejected_count == 1 and outcome.rejected[0].cdc_time == bad  # type: ignore[attr-defined]
    assert "end bound without its start" in reason
    assert outcome.log_rows == 2  # type: ignore[attr-defined]
    assert world.events.index(f"reject {bad}") < world.events.index(f"save {at(1_000).isoformat()}")


def test_a_refused_request_is_sent_again_batch_by_batch_to_name_the_change_refused() -> None:
    rows = LogRows()
    for second in range(6):
        rows.update(at(second), pk=second, ck=1, v="bad" if second == 4 else f"ok{second}")
    world = World(rows, refuse=lambda s: "bad" in s.values)
    _, outcome = world.apply()
    applied = sorted(v for _, _, v in updates(world.writes.sent))
    assert applied == ["ok0", "ok1", "ok2", "ok3", "ok5"]
    ((change, reason, _),) = world.state.rejected
    assert change.write_time_us == micros(4) and "a bad value" in reason
    assert outcome.requests == 0  # type: ignore[attr-defined]  # the packed one was refused
    assert len(world.writes.calls) == 2  # the packed request, then each batch alone


def test_a_request_over_the_sinks_size_limit_is_split_not_rejected() -> None:
    rows = LogRows()
    for second in range(8):
        rows.update(at(second), pk=second, ck=1, v="x" * 20)
    world = World(rows, max_bytes=200)
    world.apply(settings=SETTINGS.with_overrides(request_bytes=10_000))
    assert len(updates(world.writes.sent)) == 8 and not world.state.rejected
    assert all(len(request.batches) == 1 for request in world.writes.sent)


def test_only_the_first_rejects_are_kept_in_memory_every_one_on_the_sink() -> None:
    rows = LogRows()
    for second in range(REJECTS_KEPT + 20):
        rows.batch(at(second), {"op": Operation.RANGE_DELETE_END_INCLUSIVE, "pk": second})
    world = World(rows)
    _, outcome = world.apply(until=10_000)
    assert outcome.rejected_count == REJECTS_KEPT + 20  # type: ignore[attr-defined]
    assert len(outcome.rejected) == REJECTS_KEPT  # type: ignore[attr-defined]
    assert len(world.state.rejected) == REJECTS_KEPT + 20


def test_the_consistency_point_follows_each_slice_once_it_is_acknowledged() -> None:
    rows = LogRows()
    for second in range(30):
        rows.update(at(second), pk=second % 4, ck=1, v=f"v{second}")
    world = World(rows, edges=(10, 20))
    _, outcome = world.apply(until=30)
    steps: list[str] = []
    for event in world.events:  # each slice's executes, collapsed
        if event.startswith("execute") and steps and steps[-1] == "execute":
            continue
        steps.append(event if not event.startswith("execute") else "execute")
    assert steps == [
        f"slice {at(0).isoformat()}", "execute", f"save {at(10).isoformat()}",
        f"slice {at(10).isoformat()}", "execute", f"save {at(20).isoformat()}",
        f"slice {at(20).isoformat()}", "execute", f"save {at(30).isoformat()}",
    ]  # fmt: skip
    assert len(updates(world.writes.sent)) == 30
    assert outcome.slices == 3 and world.state.point.lake_version == 7  # type: ignore[attr-defined]


def test_a_run_killed_mid_slice_leaves_the_point_before_it_and_the_next_run_resumes() -> None:
    rows = LogRows()
    for second in range(30):
        rows.update(at(second), pk=second % 5, ck=1, v=f"v{second}")
    world = World(rows, edges=(10, 20), fail_after=3)  # two requests a slice
    with pytest.raises(InjectedFault):
        world.apply(until=30)
    assert world.state.point.consistent_until == at(10)  # the slice in flight is not passed
    first = updates(world.writes.sent)
    world.writes.fail_after = None
    since = world.state.point.consistent_until
    _, outcome = world.apply(since=(since - at(0)).total_seconds(), until=30)
    again = updates(world.writes.sent)[len(first) :]
    assert {v for _, _, v in again} == {f"v{s}" for s in range(10, 30)}  # all from the point
    assert {v for _, _, v in first} | {v for _, _, v in again} == {f"v{s}" for s in range(30)}
    assert world.state.point.consistent_until == at(30)
    assert outcome.log_rows == 20  # type: ignore[attr-defined]


def test_ttls_count_down_on_the_sinks_clock_read_once_per_run() -> None:
    rows = LogRows()
    rows.update(at(0), pk=1, ck=1, v="lives", ttl=3_600)
    rows.update(at(1), pk=2, ck=1, v="expired", ttl=60)
    world = World(rows, now=at(600))
    world.apply()
    (live,) = [s for r in world.writes.sent for s in r.statements if "lives" in s.values]
    assert live.cql.endswith('AND TTL ? SET "v" = ? WHERE "pk" = ? AND "ck" = ?')
    assert live.values[:2] == (micros(0), 3_000)
    (dead,) = [s for r in world.writes.sent for s in r.statements if s.values[-2] == 2]
    assert dead.values == (micros(1), None, 2, 1)  # a tombstone at its write time
    assert world.writes.clock_reads == 1


def test_the_sinks_own_changes_are_skipped_and_counted() -> None:
    rows = LogRows()
    rows.update(at(1), pk=1, ck=1, v="from here")
    rows.update(at(2), pk=2, ck=1, v="from there")
    peer = LogRows()
    peer.update(at(2), pk=2, ck=1, v="from there", stream=9)  # its own stream and time
    world = World(rows)
    world.lake.put(SINK, peer.table())
    applier = SinkApplier(world.writes, SHAPE, world.state, "run", SETTINGS)
    outcome = applier.apply(world.lake, ApplyPlan(at(0), at(10), 1), peer=SINK)
    assert [v for _, _, v in updates(world.writes.sent)] == ["from here"]
    assert (outcome.log_rows, outcome.peer_rows) == (1, 1)


def test_images_make_no_request_and_operations_are_counted_by_name() -> None:
    rows = LogRows()
    rows.batch(at(1), {"op": Operation.PRE_IMAGE, "pk": 1, "ck": 1, "v": "old"})
    rows.batch(
        at(2),
        {"op": Operation.INSERT, "pk": 1, "ck": 1, "v": "new", deleted_column("tags"): True},
        {"op": Operation.PARTITION_DELETE, "pk": 2},
    )
    world = World(rows)
    _, outcome = world.apply()
    assert len(world.writes.sent) == 1 and outcome.batches == 1  # type: ignore[attr-defined]
    assert outcome.operations == Counter(insert=1, partition_delete=1)  # type: ignore[attr-defined]
    (insert, delete) = world.writes.sent[0].statements
    assert insert.cql.startswith('INSERT INTO "shop_dr"."orders" ("pk", "ck", "v", "tags")')
    assert delete.values == (micros(2), 2)


def test_the_applied_rows_are_shown_once_acknowledged_and_only_those() -> None:
    rows = LogRows()
    rows.update(at(1), pk=1, ck=1, v="a")
    rows.batch(at(2), {"op": Operation.RANGE_DELETE_END_INCLUSIVE, "pk": 2})  # refused by the rules
    rows.update(at(3), pk=3, ck=1, v="b")
    world = World(rows)
    seen: list[pa.Table] = []
    world.apply(on_applied=seen.append)
    (shown,) = seen
    assert shown.column("v").to_pylist() == ["a", "b"]
    assert {f.name for f in shown.schema} == {f.name for f in rows.table().schema}


def test_a_slice_applied_elsewhere_is_counted_there_and_passed_by_the_point() -> None:
    from cdcgen.replication.apply import ApplyOutcome

    rows = LogRows()
    for second in range(20):
        rows.update(at(second), pk=second, ck=1, v="x")
    world = World(rows, edges=(10,))
    given: list[int] = []

    class Executors:
        def apply(self, part: object) -> ApplyOutcome:
            given.append(part.changes.num_rows)  # type: ignore[attr-defined]
            return ApplyOutcome(log_rows=part.changes.num_rows, batches=1)  # type: ignore[attr-defined]

    _, outcome = world.apply(until=20, elsewhere=Executors())
    assert given == [10, 10] and not world.writes.sent
    assert outcome.log_rows == 20 and outcome.slices == 2  # type: ignore[attr-defined]
    assert world.state.point.consistent_until == at(20)
    with pytest.raises(ValueError, match="on_applied sees changes applied in this process"):
        SinkApplier(world.writes, SHAPE, world.state, "r", SETTINGS, print, Executors())  # type: ignore[arg-type]


def test_a_value_the_lake_cannot_give_back_is_the_batchs_reject() -> None:
    shape = sink_shape(definition(SOURCE, u="uuid"), SINK, definition(SINK, u="uuid"))
    table = pa.table(
        {"cdc$stream_id": [b"\x01" * 16] * 2, "cdc$time": ["t1", "t2"], "cdc$batch_seq_no": [0, 0],
         "cdc$operation": [1, 1], "cdc$ttl": [None, None], "pk": [1, 2], "ck": [1, 1],
         "u": ["not-a-uuid", "6ba7b810-9dad-11d1-80b4-00c04fd430c8"],
         "write_time": pa.array([to_micros(at(1)), to_micros(at(2))], pa.int64()).cast(
             pa.timestamp("us", tz="UTC"))}
    )  # fmt: skip
    events = Events()
    writes, state = MemorySinkWrites(events), MemorySinkState(events)
    lake = MemoryLake(events)
    lake.put(SOURCE, table)
    SinkApplier(writes, shape, state, "run", SETTINGS).apply(lake, ApplyPlan(at(0), at(9), 1))
    ((change, reason, _),) = state.rejected
    assert change.cdc_time == "t1" and reason.startswith("u: 'not-a-uuid' is not a value of it")
    assert len(writes.sent) == 1


def test_a_slice_edge_never_falls_inside_a_cdc_batch_of_the_fake() -> None:
    """The fake lake cuts by write time, as the real one: a batch has one write time."""
    rows = LogRows()
    just_before = at(5) - timedelta(microseconds=1)
    rows.batch(just_before, {"pk": 1, "ck": 1, "v": "a"}, {"pk": 1, "ck": 2, "v": "b"})
    world = World(rows, edges=(5,))
    world.apply(until=10)
    assert [len(r.batches[0]) for r in world.writes.sent] == [2]
