"""The decisions of a changes run, over in-memory fakes of its ports.

What the orchestrator (:mod:`cdcgen.changes.changes_run`) must get right whatever the adapters:
the first run records where the table starts; only closed windows are written, the
others reported; checkpoints follow each job's write and never precede it; a run killed
anywhere resumes with nothing lost or duplicated, removing unacknowledged windows before
writing again; backfills never move checkpoints; the watermark and pruning; the row
checks' verdict and the report record. The same behaviour is checked end to end against
Cassandra and Spark in tests/integration/test_changes_extract.py.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from changes_fakes import (
    Change,
    CheckpointsFailingAfter,
    Events,
    FixedClocks,
    FixedGenerations,
    InjectedFault,
    MemoryChangeLog,
    MemoryChangesLake,
    MemoryCheckpointStore,
)

from cdcgen.changes.changes_run import (
    ChangesPorts,
    ChangesRequest,
    RowChecks,
    extract_changes,
    job_groups,
    run_changes,
)
from cdcgen.changes.result import ExtractionRun, JobRows
from cdcgen.changes.settings import ChangesSettings
from cdcgen.config import PipelineConfig
from cdcgen.core.cdc_log import TableRef
from cdcgen.core.changes_result import ChangesRunResult
from cdcgen.core.errors import DataExpired
from cdcgen.core.lake_buckets import LakeBuckets
from cdcgen.core.log_ttls import LogTtls
from cdcgen.core.stream_id import StreamId
from cdcgen.core.topology import Node, TopologyDescription, make_generation
from cdcgen.core.watermark import BucketCheckpoint
from cdcgen.core.windows import GenerationSpan, Interval, Mode, WindowKind, generation_spans
from cdcgen.ports import CheckpointStore
from cdcgen.validation.errors import ChangesInvalid
from cdcgen.validation.results import CheckOutcome, ValidationResult

T0 = datetime(2026, 11, 22, 10, 0, tzinfo=UTC)
SWITCH = T0 + timedelta(minutes=30)  # the second generation starts here
TABLE = TableRef("shop", "orders")
LEEWAY, CONFIDENCE = timedelta(seconds=1), timedelta(seconds=2)
SETTINGS = ChangesSettings(buckets=4, buckets_per_job=1)
LAKE_BUCKETS = LakeBuckets(SETTINGS.buckets)  # what the fake lake records
LATE = T0 + timedelta(days=1)  # every clock far past every window


def description(seed: int) -> TopologyDescription:
    rng = random.Random(seed)
    tokens = tuple(sorted({rng.randint(-(2**63), 2**63 - 1) for _ in range(4)}))
    return make_generation([Node("n1", 3, 12, tokens)], random.Random(seed))


SPANS = generation_spans([(T0, description(1), "g0"), (SWITCH, description(2), "g1")])


def changes(spans: Sequence[GenerationSpan], until: datetime) -> list[Change]:
    """Two-row batches every 90 s in every stream, inside each stream's generation."""
    found: list[Change] = []
    for span in spans:
        end = min(until, span.end or until)
        for offset, stream in enumerate(span.streams):
            at = span.start + timedelta(milliseconds=offset)
            while at < end:
                found += [(stream.raw, at, 0), (stream.raw, at, 1)]
                at += timedelta(seconds=90)
    return found


@dataclass
class World:
    """One table's ports, in memory, sharing one event log."""

    tmp: Path
    events: Events = field(default_factory=Events)
    clocks: FixedClocks = field(default_factory=lambda: FixedClocks(LATE))
    generations: FixedGenerations = field(default_factory=lambda: FixedGenerations(SPANS))

    def __post_init__(self) -> None:
        self.log = MemoryChangeLog(changes(SPANS, T0 + timedelta(hours=2)))
        self.store = MemoryCheckpointStore(self.events)
        self.lake = MemoryChangesLake(self.log, self.events)
        self.config = PipelineConfig(
            report_dir=self.tmp / "reports", generation_leeway=LEEWAY, confidence_window=CONFIDENCE
        )

    def ports(
        self,
        store: CheckpointStore | None = None,
        checks: RowChecks | None = None,
    ) -> ChangesPorts:
        return ChangesPorts(self.generations, self.clocks, store or self.store, self.lake, checks)

    def extract(
        self,
        interval: Interval,
        mode: Mode = Mode.INCREMENTAL,
        *,
        store: CheckpointStore | None = None,
        cdc_ttl: timedelta | None = None,
        now: datetime | None = None,
    ) -> ExtractionRun:
        request = ChangesRequest(TABLE, interval, mode, run_id=f"r{len(self.events)}")
        return extract_changes(
            request,
            self.ports(store),
            self.config,
            SETTINGS,
            cdc_ttl=cdc_ttl,
            now=now or LATE,
        )

    def assert_lake_holds_exactly(self, interval: Interval) -> None:
        """Every change of the interval in the lake exactly once, nothing else."""
        assert self.lake.rows() == self.log.between(interval.start, interval.end)


@pytest.fixture
def world(tmp_path: Path) -> World:
    return World(tmp_path)


FIRST = Interval(T0, T0 + timedelta(minutes=50))  # crosses the generation switch


# --- first run, closing ---------------------------------------------------------------------


def test_first_run_records_its_start_and_writes_every_change_once(world: World) -> None:
    result = world.extract(FIRST)
    assert result.plan.first_run and world.events[0] == f"start {T0.isoformat()}"
    assert world.store.progress(TABLE).started_at == T0
    world.assert_lake_holds_exactly(FIRST)
    assert result.rows_written == len(world.log.between(FIRST.start, FIRST.end))
    assert set(result.rows_per_generation) == {s.label for s in SPANS}
    assert result.streams_read == sum(len(s.streams) for s in SPANS)
    assert result.generations == tuple(SPANS) and result.lake_root == "memory://lake"
    assert world.generations.asked == [(FIRST.start, FIRST.end)]
    # A second run of the same interval has nothing left to do.
    again = world.extract(FIRST)
    assert again.windows == () and again.jobs == 0 and world.lake.writes == result.jobs
    assert not again.plan.first_run and world.events.named("start") == [world.events[0]]


def test_only_closed_windows_are_written_and_the_others_reported(world: World) -> None:
    # Every clock is past the first generation's end (+ leeway + confidence), not the
    # interval's: the first generation is written, the second waits.
    world.clocks.at = SWITCH + LEEWAY + CONFIDENCE
    result = world.extract(FIRST)
    assert {w.generation.label for w in result.windows} == {SPANS[0].label}
    (pending,) = result.plan.pending
    assert pending.generation == SPANS[1].label and pending.end == FIRST.end
    assert pending.closes_at == FIRST.end + LEEWAY + CONFIDENCE
    assert result.outcome().pending[0].closes_at == pending.closes_at.isoformat()
    assert world.lake.rows() == world.log.between(T0, SWITCH)
    # The watermark waits for the pending generation; once the clocks pass, all is read.
    assert world.store.progress(TABLE).watermark == SWITCH
    world.clocks.at = pending.closes_at - timedelta(milliseconds=1)
    assert world.extract(FIRST).windows == ()
    world.clocks.at = pending.closes_at
    assert world.extract(FIRST).plan.pending == ()
    world.assert_lake_holds_exactly(FIRST)


# --- checkpoints and kills ------------------------------------------------------------------


class LakeCheckingStore(MemoryCheckpointStore):
    """Fails a save whose rows are not in the lake yet: a checkpoint must never precede
    the write it acknowledges."""

    def __init__(self, world: World) -> None:
        super().__init__(world.events)
        self.world = world

    def save(self, table: TableRef, checkpoints: Iterable[BucketCheckpoint]) -> int:
        checkpoints = list(checkpoints)
        in_lake = set(self.world.lake.rows())
        for c in checkpoints:
            assert c.window_start is not None
            (span,) = [s for s in SPANS if s.start == c.generation]
            for stream in span.buckets(LAKE_BUCKETS)[c.bucket]:
                rows = self.world.log.window(stream.raw, c.window_start, c.checkpoint)
                assert set(rows) <= in_lake, f"checkpoint of bucket {c.bucket} before {stream}"
        return super().save(table, checkpoints)


def test_checkpoints_follow_each_job_write_and_never_precede_it(world: World) -> None:
    world.store = LakeCheckingStore(world)
    result = world.extract(FIRST)
    jobs = job_groups(result.windows, SETTINGS.buckets_per_job)
    assert result.jobs == len(jobs) == SETTINGS.buckets  # one bucket per job
    expected = []
    for job in jobs:
        expected += [
            f"write {sorted({w.bucket for w in job})}",
            f"save {len(job)}",  # one checkpoint per window: a generation's bucket
        ]
    assert [e for e in world.events if e.startswith(("write", "save"))] == expected
    # Every bucket acknowledged up to its window's end (the first generation's rows were
    # pruned: the watermark implies them).
    saved = {(c.generation, c.bucket): c.checkpoint for c in world.store.checkpoints(TABLE)}
    assert saved == {(SWITCH, b): FIRST.end for b in SPANS[1].buckets(LAKE_BUCKETS)}


def _streams_of_buckets(buckets: set[int]) -> set[StreamId]:
    return {s for span in SPANS for s in span.streams if LAKE_BUCKETS.of(s) in buckets}


def _acknowledged_streams(store: MemoryCheckpointStore) -> set[StreamId]:
    """The streams the stored checkpoints cover (each covers one generation's bucket)."""
    spans = {span.start: span for span in SPANS}
    return {
        stream
        for c in store.checkpoints(TABLE)
        for stream in spans[c.generation].buckets(LAKE_BUCKETS).get(c.bucket, ())
    }


def _written_buckets(events: Events, writes: int) -> set[int]:
    return {int(b) for e in events.named("write")[:writes] for b in e[7:-1].split(", ")}


def test_a_task_killed_inside_a_job_commits_nothing_of_it_and_the_run_resumes(
    world: World,
) -> None:
    world.lake = MemoryChangesLake(world.log, world.events, fail_on_write=3)
    with pytest.raises(InjectedFault):
        world.extract(FIRST)
    assert world.lake.writes == 3 and len(world.events.named("save")) == 2
    acknowledged = _streams_of_buckets(_written_buckets(world.events, 2))
    assert _acknowledged_streams(world.store) == acknowledged
    resumed = world.extract(FIRST)
    assert not {s for w in resumed.windows for s in w.streams} & acknowledged
    world.assert_lake_holds_exactly(FIRST)


def test_a_driver_killed_between_jobs_keeps_its_checkpoints_and_resumes_exactly(
    world: World,
) -> None:
    with pytest.raises(InjectedFault):
        world.extract(FIRST, store=CheckpointsFailingAfter(world.store, saves=2))
    done = _acknowledged_streams(world.store)
    assert done == _streams_of_buckets(_written_buckets(world.events, 2))
    assert world.store.progress(TABLE).watermark is None  # never reached
    resumed = world.extract(FIRST)
    read = {s for w in resumed.windows for s in w.streams}
    assert read and not read & done  # acknowledged streams are not read again
    world.assert_lake_holds_exactly(FIRST)
    assert world.store.progress(TABLE).watermark == FIRST.end


def test_unacknowledged_windows_are_removed_before_anything_is_written_again(
    world: World,
) -> None:
    # The second job's files are committed, then the driver dies before checkpointing.
    world.lake = MemoryChangesLake(world.log, world.events, die_after_write=2)
    with pytest.raises(InjectedFault):
        world.extract(FIRST)
    (stale_bucket,) = _written_buckets(world.events, 2) - _written_buckets(world.events, 1)
    stale = {w for w in world.lake.windows() if w.bucket == stale_bucket}
    assert stale and world.store.checkpoints(TABLE) != []  # the first job's stand
    # The next run covers a longer interval: its windows end elsewhere, so the stale
    # files would be duplicates if they stayed.
    later = Interval(T0, T0 + timedelta(minutes=70))
    mark = len(world.events)
    resumed = world.extract(later)
    run_events = world.events[mark:]
    removed = [e for e in run_events if e.startswith("remove")]
    assert resumed.garbage_removed == len(removed) == len(stale)
    assert set(resumed.plan.garbage) == stale
    first_write = min(i for i, e in enumerate(run_events) if e.startswith("write"))
    assert all(run_events.index(e) < first_write for e in removed)
    assert WindowKind.RESUME in {w.kind for w in resumed.windows}
    world.assert_lake_holds_exactly(later)


# --- backfills, watermark -------------------------------------------------------------------


def test_a_backfill_rewrites_acknowledged_windows_and_never_moves_checkpoints(
    world: World,
) -> None:
    world.extract(FIRST)
    before = (world.store.checkpoints(TABLE), world.store.progress(TABLE))
    mark = len(world.events)
    backfill = world.extract(Interval(T0, SWITCH), Mode.BACKFILL)
    assert backfill.windows and {w.kind for w in backfill.windows} == {WindowKind.REPLACE}
    assert [e.split()[0] for e in world.events[mark:]] == ["write"] * backfill.jobs
    assert (world.store.checkpoints(TABLE), world.store.progress(TABLE)) == before
    assert world.generations.asked[-1] == (T0, SWITCH)  # a backfill starts at its interval
    world.assert_lake_holds_exactly(FIRST)


def test_the_watermark_follows_the_slowest_stream_and_prunes_finished_generations(
    world: World,
) -> None:
    world.extract(FIRST)
    assert world.store.progress(TABLE).watermark == FIRST.end
    # The first generation ended before the watermark: its checkpoints were pruned.
    assert {c.generation for c in world.store.checkpoints(TABLE)} == {SWITCH}
    assert world.events.named("prune") == ["prune 1"]
    # The run after a skipped one asks for spans from the floor (the watermark) and
    # catches up: nothing between the two intervals is lost.
    nxt = Interval(FIRST.end + timedelta(minutes=20), FIRST.end + timedelta(minutes=40))
    world.extract(nxt)
    assert world.generations.asked[-1] == (FIRST.end, nxt.end)
    assert world.store.progress(TABLE).watermark == nxt.end
    world.assert_lake_holds_exactly(Interval(T0, nxt.end))


def test_a_window_past_the_cdc_ttl_fails_before_anything_is_written(world: World) -> None:
    with pytest.raises(DataExpired, match="Re-bootstrap"):
        world.extract(FIRST, cdc_ttl=timedelta(hours=1), now=T0 + timedelta(days=2))
    assert world.lake.writes == 0 and world.store.checkpoints(TABLE) == []


def test_a_ttl_raised_since_the_last_run_still_bounds_the_rows_logged_before_it(
    world: World,
) -> None:
    """ScyllaDB writes each log row with the TTL in effect then: raised from an hour to a
    day after a run, the rows after that run's watermark may keep the hour until the
    watermark passes the start of the first run that saw the day."""
    hour, day = timedelta(hours=1), timedelta(days=1)
    first_at = FIRST.end + timedelta(minutes=2)
    world.extract(FIRST, cdc_ttl=hour, now=first_at)
    assert world.store.progress(TABLE).log_ttls == LogTtls(3600, 3600, first_at)
    nxt = Interval(FIRST.end, FIRST.end + timedelta(minutes=20))
    with pytest.raises(DataExpired, match=r"minus the CDC TTL \(1:00:00\)"):
        world.extract(nxt, cdc_ttl=day, now=FIRST.end + timedelta(hours=3))
    assert world.store.progress(TABLE).watermark == FIRST.end  # nothing moved
    # Within the hour the run goes ahead; the raise happened before it started, at most.
    raised_by = FIRST.end + timedelta(minutes=30)
    world.extract(nxt, cdc_ttl=day, now=raised_by)
    assert world.store.progress(TABLE).log_ttls == LogTtls(3600, 86_400, raised_by)
    # Its watermark is before that start: rows after it may still carry the hour.
    later = Interval(nxt.end, nxt.end + timedelta(minutes=20))
    with pytest.raises(DataExpired, match=r"\(1:00:00\)"):
        world.extract(later, cdc_ttl=day, now=nxt.end + timedelta(hours=20))
    # Once the watermark is past it, every row after was logged with the day.
    world.extract(later, cdc_ttl=day, now=nxt.end + timedelta(minutes=30))
    assert world.store.progress(TABLE).log_ttls == LogTtls(86_400, 86_400, raised_by)
    last = Interval(later.end, later.end + timedelta(minutes=10))
    world.extract(last, cdc_ttl=day, now=later.end + timedelta(hours=20))
    world.assert_lake_holds_exactly(Interval(T0, last.end))


# --- the whole run: checks and report -------------------------------------------------------


class FixedVerdict:
    """Row checks that fail the jobs numbered in ``failing`` (every job if ``passed`` is
    False) and remember what they were asked to check: ``(result, job)`` pairs."""

    def __init__(
        self,
        passed: bool,
        report_dir: Path,
        failing: Iterable[int] = (),
        events: Events | None = None,
    ) -> None:
        self.events = events if events is not None else Events()
        self.passed = passed
        self.failing = set(failing)
        self.report_dir = report_dir
        self.checked: list[tuple[ExtractionRun, JobRows | None]] = []

    def check(self, result: ExtractionRun, job: JobRows | None = None) -> ValidationResult:
        self.checked.append((result, job))
        self.events.append(f"check {None if job is None else job.number}")
        passed = self.passed and (job is None or job.number not in self.failing)
        row = {"stream_hex": "ab" * 16, "cdc_time": "t", "batch_seq_no": 0, "base_key": "k"}
        samples = () if passed else (row,)
        check = CheckOutcome(
            "changes_rows", "expect_x", "colocation", passed, len(samples), samples
        )
        return ValidationResult(passed, [check], self.report_dir / "index.html", "summary")


def run(
    world: World, checks: FixedVerdict, interval: Interval = FIRST, run_id: str = "run-1"
) -> ChangesRunResult:
    request = ChangesRequest(TABLE, interval, dag_id="cdc_changes", run_id=run_id)
    return run_changes(
        request, world.ports(checks=checks), world.config, SETTINGS, cdc_ttl=None, now=LATE
    )


def test_a_run_checks_each_job_before_checkpointing_it_and_records_itself(world: World) -> None:
    checks = FixedVerdict(True, world.tmp / "docs", events=world.events)
    output = run(world, checks)
    result = checks.checked[0][0]
    jobs = [job for _, job in checks.checked]
    assert result.windows and result.generations == tuple(SPANS)
    assert all(job is not None for job in jobs) and len(jobs) == result.jobs > 1
    assert [job.number for job in jobs if job] == list(range(1, len(jobs) + 1))
    checked = [w for job in jobs if job for w in job.windows]
    assert len(checked) == len(result.windows) and set(checked) == set(result.windows)
    assert [job.version for job in jobs if job] == result.lake_versions
    # Each job was checked after its commit and before its buckets were checkpointed.
    steps = [e.split()[0] for e in world.events if e.split()[0] in ("write", "check", "save")]
    assert steps == ["write", "check", "save"] * len(jobs)
    assert output.status == "done" and output.rows_written == result.rows_written
    assert output.checks is not None
    assert output.checks.passed is True and output.checks.failed == ()
    assert output.checks.summary == "; ".join(f"job {n}: summary" for n in range(1, len(jobs) + 1))
    assert output.quarantined_versions == ()
    assert Path(str(output.report)).is_file()
    # Nothing new to read: no check runs, still a success.
    idle = run(world, checks)
    assert len(checks.checked) == len(jobs) and idle.status == "done"
    assert "checks" not in idle.to_json()


def test_rows_failing_the_checks_are_quarantined_and_never_checkpointed(world: World) -> None:
    checks = FixedVerdict(True, world.tmp / "docs", failing={2})
    with pytest.raises(ChangesInvalid) as caught:
        run(world, checks)
    output = caught.value.output
    assert output is not None and output.status == "row checks failed"
    assert output.checks is not None and output.report is not None
    assert output.checks.failed == ("colocation [changes_rows.expect_x]: 1 offending row(s)",)
    assert [c.check for c in output.checks.checks] == ["colocation"]  # one per check
    assert output.checks.checks[0].samples[0]["stream_hex"] == "ab" * 16
    assert Path(output.report).is_file()
    # Job 2 failed: reverted right after its commit, never checkpointed; the other jobs
    # were checked and checkpointed.
    jobs = [job for _, job in checks.checked if job is not None]
    assert len(jobs) == len(checks.checked) > 2
    failed = jobs[1]
    assert output.quarantined_versions == (failed.version,)
    assert failed.version + 1 in output.lake_versions  # the revert
    saved = {c.bucket for c in world.store.checkpoints(TABLE)}
    assert saved == {w.bucket for job in jobs if job is not failed for w in job.windows}
    assert not saved & {w.bucket for w in failed.windows}
    # The table's current version no longer holds the failed job's rows; time travel does.
    held = set(world.lake.windows())
    assert not held & {w.lake_window for w in failed.windows}
    assert {w.lake_window for w in failed.windows} <= set(world.lake.history[failed.version])
    # The watermark never passes them: it stays before the failed buckets' windows.
    watermark = world.store.progress(TABLE).watermark
    assert watermark is None or watermark <= min(w.start for w in failed.windows)
    # The next run, with good rows, reads those windows again and completes the interval.
    output = run(world, FixedVerdict(True, world.tmp / "docs"), run_id="run-2")
    assert output.status == "done"
    world.assert_lake_holds_exactly(FIRST)
    assert world.store.progress(TABLE).watermark == FIRST.end
