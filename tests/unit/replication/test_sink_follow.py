"""A followed sink's decisions, on fakes of every port (``cdcgen.replication.sink_follow``):
each cycle a run of its own that resumes where the last one left the sink, what the
lake gained between cycles applied once, a transient failure left to the next cycle,
rejected changes ending the follow, and a lake that never had a watermark of the table
named at the end.

The follow keeps its own pace (real time): the paces here are a few tens of
milliseconds, and the tests assert what holds however many cycles fit."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from replication_fakes import SINK, SOURCE, T0, LogRows, MemoryCheckpoints, Ports, at

from cdcgen.config import PipelineConfig
from cdcgen.core.cdc_log import Operation
from cdcgen.core.errors import LakeNotStarted
from cdcgen.core.follow_loop import FollowPace
from cdcgen.core.replication_record import ReplicationRunStatus
from cdcgen.core.watermark import TableProgress
from cdcgen.ports import Refusal, SinkBatch
from cdcgen.replication.replication_run import Mode, Replication, ReplicationRequest
from cdcgen.replication.sink_follow import follow_replication
from unit.table_definitions import definition

JOB = Replication(SOURCE, SINK)


@pytest.fixture
def config(tmp_path: Path) -> PipelineConfig:
    return PipelineConfig.from_env({"CDCGEN_REPORT_DIR": str(tmp_path / "reports")})


def pace(cycles: int, every_ms: int = 20) -> FollowPace:
    """About ``cycles`` cycles from now, ``every_ms`` apart."""
    every = timedelta(milliseconds=every_ms)
    return FollowPace(until=datetime.now(UTC) + every * cycles, every=every)


def world(seconds: int = 10) -> Ports:
    fakes = Ports.of(
        [definition(SOURCE, v="text", tags="set<text>")],
        [definition(SINK, v="text", tags="set<text>")],
    )
    rows = LogRows()
    for second in range(seconds):
        rows.update(at(second), pk=second, ck=1, v=f"v{second}")
    fakes.lake.put(SOURCE, rows.table())
    fakes.checkpoints.covers(SOURCE, T0, at(seconds), version=1)
    state = fakes.state()
    state.ensure_schema()
    state.save_progress(at(0), "boot", bootstrapped_at=at(0))
    fakes.events.clear()
    return fakes


def written(fakes: Ports) -> int:
    """The statements the sink received, over every request of every cycle."""
    return sum(len(sent.statements) for sent in fakes.writes.sent)


class MovingWatermark(MemoryCheckpoints):
    """The changes pipeline moving on between cycles: each run reads the next watermark
    (the last one stays)."""

    def __init__(self, watermarks: Sequence[datetime]) -> None:
        super().__init__()
        self.watermarks = list(watermarks)

    def progress(self, table: object) -> TableProgress:
        until = self.watermarks.pop(0) if len(self.watermarks) > 1 else self.watermarks[0]
        return TableProgress(SOURCE, T0, until, until, "changes", 1)


def test_each_cycle_is_a_run_of_its_own_and_nothing_is_applied_twice(
    config: PipelineConfig,
) -> None:
    fakes = world()
    request = ReplicationRequest(JOB, "follow", Mode.APPLY)
    record = follow_replication(config, fakes.ports(), request, pace(4))
    assert record.run_id == "follow" and record.status is ReplicationRunStatus.OK
    numbers = [cycle.number for cycle in record.cycles]
    assert numbers == list(range(1, len(numbers) + 1)) and numbers
    assert [c.applied_log_rows for c in record.cycles] == [10] + [0] * (len(numbers) - 1)
    assert record.applied_log_rows == 10  # every cycle's, summed
    assert written(fakes) == 10  # the later cycles resumed at the point: no replay
    assert fakes.state().point.consistent_until == at(10)


def test_what_the_lake_gains_between_cycles_is_applied_by_the_next(
    config: PipelineConfig,
) -> None:
    fakes = world()
    fakes.checkpoints = MovingWatermark([at(4), at(7), at(10)])
    request = ReplicationRequest(JOB, "follow", Mode.APPLY)
    record = follow_replication(config, fakes.ports(), request, pace(6))
    reached = [cycle.consistent_until for cycle in record.cycles[:3]]
    assert reached == [at(4).isoformat(), at(7).isoformat(), at(10).isoformat()]
    applied = [cycle.applied_log_rows for cycle in record.cycles[:3]]
    assert all(n > 0 for n in applied) and sum(applied) == 10 == record.applied_log_rows
    assert written(fakes) == 10


def test_a_transient_failure_is_left_to_the_next_cycle(config: PipelineConfig) -> None:
    fakes = world()
    failures = iter([RuntimeError("the sink stopped answering")])
    execute = fakes.writes.execute

    def once_down(requests: Sequence[Sequence[SinkBatch]]) -> list[Refusal]:
        failure = next(failures, None)
        if failure is not None:
            raise failure
        return execute(requests)

    fakes.writes.execute = once_down  # type: ignore[method-assign]
    request = ReplicationRequest(JOB, "follow", Mode.APPLY)
    record = follow_replication(config, fakes.ports(), request, pace(4))
    assert record.cycles[0].number == 2  # cycle 1 failed before moving the point
    assert record.applied_log_rows == 10 and written(fakes) == 10
    assert fakes.state().point.consistent_until == at(10)


def test_rejected_changes_end_the_follow_at_that_cycle(config: PipelineConfig) -> None:
    fakes = world(seconds=0)
    rows = LogRows()
    rows.update(at(1), pk=1, ck=1, v="fine")
    rows.batch(at(2), {"op": Operation.RANGE_DELETE_END_INCLUSIVE, "pk": 2})
    fakes.lake.put(SOURCE, rows.table())
    fakes.checkpoints.covers(SOURCE, T0, at(10))
    request = ReplicationRequest(JOB, "follow", Mode.APPLY)
    record = follow_replication(config, fakes.ports(), request, pace(50, every_ms=100))
    assert record.status is ReplicationRunStatus.REJECTED and record.rejected_count == 1
    assert [cycle.number for cycle in record.cycles] == [1]  # not the 50 the pace allows


def test_a_lake_without_a_watermark_is_waited_for_then_named(config: PipelineConfig) -> None:
    fakes = world()
    fakes.checkpoints = MemoryCheckpoints()  # the changes pipeline never ran on the table
    request = ReplicationRequest(JOB, "follow", Mode.APPLY)
    with pytest.raises(LakeNotStarted):
        follow_replication(config, fakes.ports(), request, pace(3))
    assert fakes.writes.sent == [] and "save" not in " ".join(fakes.events)


@pytest.mark.parametrize(
    "request_",
    [
        ReplicationRequest(JOB, "follow", Mode.APPLY, dry_run=True),
        ReplicationRequest(JOB, "follow", Mode.BOOTSTRAP),
    ],
    ids=["dry-run", "bootstrap"],
)
def test_a_follow_only_applies(config: PipelineConfig, request_: ReplicationRequest) -> None:
    with pytest.raises(ValueError, match="a follow only applies"):
        follow_replication(config, world().ports(), request_, pace(2))
