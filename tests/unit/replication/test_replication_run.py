"""A replication run's and a bootstrap's decisions, on fakes of every port
(``cdcgen.replication.replication_run``): what is refused before anything is written, when a run
bootstraps first, what a dry run leaves untouched, and what the record says."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest
from replication_fakes import SINK, SOURCE, T0, LogRows, Ports, at

from cdcgen.config import PipelineConfig
from cdcgen.core.cdc_log import Operation
from cdcgen.core.errors import LakeNotStarted, ReplicationError
from cdcgen.core.replication_record import ReplicationRunStatus
from cdcgen.replication.errors import SinkSchemaError
from cdcgen.replication.replication_run import (
    Mode,
    Replication,
    ReplicationRequest,
    bootstrap_sink,
    replicate,
)
from cdcgen.replication.settings import ReplicationSettings
from unit.table_definitions import definition

JOB = Replication(SOURCE, SINK)


@pytest.fixture
def config(tmp_path: Path) -> PipelineConfig:
    return PipelineConfig.from_env({"CDCGEN_REPORT_DIR": str(tmp_path / "reports")})


def world(*, sink_columns: dict[str, str] | None = None, same_cluster: bool = False) -> Ports:
    source = definition(SOURCE, v="text", tags="set<text>")
    sink = definition(SINK, **(sink_columns or {"v": "text", "tags": "set<text>"}))
    fakes = Ports.of([source], [sink], same_cluster=same_cluster)
    rows = LogRows()
    for second in range(10):
        rows.update(at(second), pk=second, ck=1, v=f"v{second}")
    fakes.lake.put(SOURCE, rows.table())
    fakes.checkpoints.covers(SOURCE, T0, at(10), version=3)
    return fakes


def bootstrapped(fakes: Ports, since: float = 0) -> None:
    state = fakes.state()
    state.ensure_schema()
    state.save_progress(at(since), "boot", bootstrapped_at=at(since))
    fakes.events.clear()


def test_a_run_applies_from_the_consistency_point_to_the_watermark(config: PipelineConfig) -> None:
    fakes = world()
    bootstrapped(fakes, since=4)
    record = replicate(config, fakes.ports(), ReplicationRequest(JOB, "apply"))
    assert record.status is ReplicationRunStatus.OK and record.applied_log_rows == 6
    assert record.consistent_from == at(4).isoformat()
    assert record.consistent_until == at(10).isoformat() and record.lake_version == 3
    assert record.applied_operations == {"update": 6}
    assert fakes.state().point.consistent_until == at(10)
    assert list(Path(config.report_dir).rglob("*.json"))  # the record is kept for the page


def test_the_rejected_changes_are_the_records_and_the_point_still_moves(
    config: PipelineConfig,
) -> None:
    fakes = world()
    rows = LogRows()
    rows.update(at(1), pk=1, ck=1, v="fine")
    bad = rows.batch(at(2), {"op": Operation.RANGE_DELETE_END_INCLUSIVE, "pk": 2})
    fakes.lake.put(SOURCE, rows.table())
    bootstrapped(fakes)
    record = replicate(config, fakes.ports(), ReplicationRequest(JOB, "apply"))
    assert record.status is ReplicationRunStatus.REJECTED and record.rejected_count == 1
    assert record.rejected[0].cdc_time == bad
    assert record.to_json()["status"] == "rejected"  # the file keeps its string
    assert fakes.state().point.consistent_until == at(10)


def test_a_sink_that_is_its_source_is_refused_before_anything_is_written(
    config: PipelineConfig,
) -> None:
    fakes = world(same_cluster=True)
    itself = Replication(SOURCE, SOURCE)
    for run in (replicate, bootstrap_sink):
        with pytest.raises(ReplicationError, match="is the source table itself"):
            run(config, fakes.ports(), ReplicationRequest(itself, "r", Mode.BOOTSTRAP))
    assert fakes.events == []
    other = Ports.of([definition(SOURCE)], [definition(SOURCE)])  # another cluster
    other.checkpoints.covers(SOURCE, T0, at(1))
    other.lake.put(SOURCE, LogRows().table())
    bootstrapped(other)
    other.states.tables[(SOURCE, SOURCE)] = other.state()
    record = replicate(config, other.ports(), ReplicationRequest(itself, "r"))
    assert record.status is ReplicationRunStatus.OK


def test_a_sink_never_bootstrapped_is_refused_in_apply_mode_and_copied_if_needed(
    config: PipelineConfig,
) -> None:
    fakes = world()
    with pytest.raises(ReplicationError, match="never bootstrapped"):
        replicate(config, fakes.ports(), ReplicationRequest(JOB, "apply"))
    assert not fakes.writes.sent
    fakes.events.clear()
    request = ReplicationRequest(JOB, "first", Mode.BOOTSTRAP_IF_NEEDED)
    fakes.checkpoints.covers(SOURCE, T0, T0 + timedelta(days=3))
    record = replicate(config, fakes.ports(), request)
    assert record.bootstrap is not None and record.bootstrap.copied_rows == 40
    copied = fakes.events.index("copy 4")
    assert fakes.events[:3] == ["ensure_schema", "check_clusters", "ensure_schema"]
    assert fakes.events.index("end_copy") > copied  # the copy's state goes once it is done
    snapshot = fakes.state().point.bootstrapped_at
    assert snapshot is not None and record.consistent_from == snapshot.isoformat()
    assert record.applied_log_rows == 0  # every change is before the snapshot


def test_an_unfinished_copy_is_refused_by_a_run_and_resumed_by_a_bootstrap(
    config: PipelineConfig,
) -> None:
    fakes = world()
    bootstrapped(fakes)
    state = fakes.state()
    state.start_copy(at(5), truncate=True, run_id="killed")
    with pytest.raises(ReplicationError, match=r"a bootstrap's copy at .* is unfinished"):
        replicate(config, fakes.ports(), ReplicationRequest(JOB, "apply"))
    record = replicate(
        config, fakes.ports(), ReplicationRequest(JOB, "boot", Mode.BOOTSTRAP_IF_NEEDED)
    )
    assert record.bootstrap is not None and record.bootstrap.bootstrapped_at == at(5).isoformat()
    assert state.copy is None and "truncate" in fakes.events  # no range was recorded yet
    assert record.applied_log_rows == 5  # from the copy's own snapshot on


def test_a_dry_run_writes_nothing_and_says_what_it_would_apply(config: PipelineConfig) -> None:
    fakes = world(sink_columns={"v": "text"})  # the sink lacks tags
    bootstrapped(fakes, since=2)
    record = replicate(config, fakes.ports(), ReplicationRequest(JOB, "dry", dry_run=True))
    assert record.status is ReplicationRunStatus.DRY_RUN and record.dry_run
    assert (record.would_apply_from, record.would_apply_until) == (
        at(2).isoformat(), at(10).isoformat(),
    )  # fmt: skip
    assert fakes.events == [] and not fakes.writes.sent
    assert "tags" not in fakes.sink.definitions[SINK].types  # checked as it would be


def test_a_bootstrap_dry_run_names_what_it_would_truncate(config: PipelineConfig) -> None:
    fakes = world()
    fakes.sink.rows[SINK] = 3
    request = ReplicationRequest(JOB, "dry", Mode.BOOTSTRAP_REPLACE, dry_run=True)
    fakes.checkpoints.covers(SOURCE, T0, T0 + timedelta(days=3))
    record = bootstrap_sink(config, fakes.ports(), request)
    assert record.kind == "bootstrap" and record.would_truncate == SINK.qualified
    assert record.sink_cluster == "sink" and record.status is ReplicationRunStatus.DRY_RUN
    assert "ensure_schema" not in fakes.events and "start_copy" not in " ".join(fakes.events)
    with pytest.raises(ReplicationError, match="already holds rows"):
        bootstrap_sink(config, fakes.ports(), ReplicationRequest(JOB, "boot", Mode.BOOTSTRAP))


def test_the_sources_new_columns_are_added_to_the_sink_unless_told_not_to(
    config: PipelineConfig,
) -> None:
    fakes = world(sink_columns={"v": "text"})
    bootstrapped(fakes)
    refusing = fakes.ports(ReplicationSettings(add_columns=False))
    with pytest.raises(SinkSchemaError, match=r"has no column\(s\) tags of the source"):
        replicate(config, refusing, ReplicationRequest(JOB, "refused"))
    assert fakes.state().point.consistent_until == at(0)
    record = replicate(config, fakes.ports(), ReplicationRequest(JOB, "apply"))
    assert "add_column shop_dr.orders tags" in fakes.events
    assert record.applied_log_rows == 10


def test_nothing_new_in_the_lake_applies_nothing(config: PipelineConfig) -> None:
    fakes = world()
    bootstrapped(fakes, since=10)
    record = replicate(config, fakes.ports(), ReplicationRequest(JOB, "apply"))
    assert record.applied_log_rows == 0 and record.status is ReplicationRunStatus.OK
    assert not fakes.writes.sent and record.consistent_until == at(10).isoformat()


def test_a_lake_without_the_table_yet_says_so(config: PipelineConfig) -> None:
    fakes = world()
    fakes.checkpoints.tables.clear()
    bootstrapped(fakes)
    with pytest.raises(LakeNotStarted, match="no change of it is in the lake yet"):
        replicate(config, fakes.ports(), ReplicationRequest(JOB, "apply"))


def test_a_source_table_that_does_not_exist_is_named(config: PipelineConfig) -> None:
    fakes = world()
    bootstrapped(fakes)
    fakes.source.definitions.clear()
    with pytest.raises(ReplicationError, match=r"shop\.orders does not exist on the source"):
        replicate(config, fakes.ports(), ReplicationRequest(JOB, "apply"))
    fakes.sink.definitions.clear()
    fakes.source.definitions[SOURCE] = definition(SOURCE, v="text")
    with pytest.raises(SinkSchemaError, match=r"shop_dr\.orders does not exist: create it"):
        replicate(config, fakes.ports(), ReplicationRequest(JOB, "apply"))
