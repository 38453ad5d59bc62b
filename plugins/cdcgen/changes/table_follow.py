"""A table's changes followed: a run every few seconds as windows close, in one process.

A scheduled run pays a Spark application's start (a driver JVM, its cold first job)
and then waits for its interval's end to close; a follow pays the start once and then,
each cycle (:func:`cdcgen.core.follow_loop.follow`), reads every node's clock, extracts every
window that closed since the last cycle (:func:`cdcgen.core.clocks.closed_until`: the
latest end all clocks are past by leeway + confidence window) and checks it, as a run
does (:func:`cdcgen.changes.changes_run.run_changes`): so a change reaches the lake about the
confidence window + leeway + a cycle after it was written.

Each cycle is a run of its own, with every guarantee of one: its own run id
(``<run id>-c<cycle>``, on its checkpoints and its report record), its adapters built
anew (a column added to the table between two cycles is read by the next one), windows
from the checkpoints (a cycle that failed transiently is read again by the next). A
cycle whose checks fail ends the follow, as a run's failure ends its task. A follow that
closes nothing for the clock wait timeout (a node's clock unreadable or standing still)
fails transiently, naming the node, as the scheduled mode's wait would. The follow's
result adds its cycles up, and lists each with the instant its windows end and the
instant they were checked and checkpointed, for freshness to be measured; one that
extracted nothing carries the table's stored watermark, so that its lag still shows.
"""

from __future__ import annotations

import logging
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from cdcgen.adapters.checkpoints import CqlCheckpointStore
from cdcgen.adapters.cql import open_client
from cdcgen.adapters.errors import is_terminal
from cdcgen.changes.changes_run import ChangesRequest, run_changes
from cdcgen.changes.errors import NothingClosed
from cdcgen.changes.job import table_adapters
from cdcgen.changes.settings import ChangesSettings
from cdcgen.config import PipelineConfig
from cdcgen.core.changes_result import ChangesRunResult, CycleEntry
from cdcgen.core.changes_status import ChangesRunStatus
from cdcgen.core.clocks import ClockCheck, closed_until, window_closes_at
from cdcgen.core.follow_loop import FollowPace, follow
from cdcgen.core.windows import Interval, Mode
from cdcgen.spark_runtime.session import JobKind, job_session
from cdcgen.validation.errors import ChangesInvalid

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

log = logging.getLogger(__name__)


@dataclass
class FollowTotals:
    """The follow's result so far: each cycle's result added to the first one's."""

    request: ChangesRequest
    result: ChangesRunResult | None = None
    cycles: list[CycleEntry] = field(default_factory=list)
    rows_per_generation: Counter[str] = field(default_factory=Counter)

    def add(self, number: int, end: datetime, output: ChangesRunResult) -> None:
        self.rows_per_generation.update(output.rows_per_generation)
        self.cycles.append(
            CycleEntry(
                number=number,
                closed_until=end.isoformat(),
                finished_at=datetime.now(UTC).isoformat(),
                rows=output.rows_written,
                watermark=output.watermark,
                status=output.status,
            )
        )
        last = self.result
        if last is None:
            self.result = output
            return
        self.result = output.updated(
            windows=last.windows + output.windows,
            jobs=last.jobs + output.jobs,
            rows_written=last.rows_written + output.rows_written,
            streams_read=last.streams_read + output.streams_read,
            garbage_removed=last.garbage_removed + output.garbage_removed,
            lake_versions=last.lake_versions + output.lake_versions,
            quarantined_versions=last.quarantined_versions + output.quarantined_versions,
            seconds=last.seconds + output.seconds,
        )

    def total(self, watermark: str | None = None) -> ChangesRunResult:
        """The whole follow as one run's result, under the follow's own run id; while no
        cycle extracted anything, with the table's stored ``watermark``, so that its lag
        still shows (and alerts)."""
        start = self.request.interval.start.isoformat()
        ends = [cycle.closed_until for cycle in self.cycles]
        idle = ChangesRunResult(
            table=self.request.table.qualified, mode=Mode.INCREMENTAL, watermark=watermark
        )
        return (self.result or idle).updated(
            run_id=self.request.run_id,
            interval=(start, ends[-1] if ends else start),
            rows_per_generation=dict(self.rows_per_generation),
            cycles=tuple(self.cycles),
        )


def follow_changes(
    config: PipelineConfig,
    request: ChangesRequest,
    pace: FollowPace,
    *,
    settings: ChangesSettings | None = None,
    validate: bool = True,
    spark: SparkSession | None = None,
    on_cycle: Callable[[ChangesRunResult], None] = lambda so_far: None,
) -> ChangesRunResult:
    """Follow ``request.table`` from ``request.interval.start`` until ``pace.until``
    (see the module doc); its result adds the cycles up, and ``on_cycle`` is given that
    sum after each cycle that ran (the job keeps it in its result file, so that a
    follow killed part-way still says what it did). Raises what a run raises; a
    :class:`ChangesInvalid` carries the follow's result up to the failed cycle."""
    settings = settings or ChangesSettings.from_env()
    session = spark or job_session(JobKind.CHANGES_EXTRACT)
    totals = FollowTotals(request)
    client = open_client(config)
    latest = request.interval.start
    progressed = time.monotonic()  # when a cycle last closed something
    attempt: list[tuple[int, datetime]] = []  # the cycle under way: its number and end

    def cycle(number: int) -> tuple[int, datetime, ChangesRunResult] | None:
        nonlocal progressed
        adapters = table_adapters(client, session, config, settings, request.table)
        clocks = adapters.clocks.read_clocks()
        end = closed_until(clocks, config.generation_leeway, config.confidence_window)
        if end is None or end <= latest:
            target = window_closes_at(latest, config.generation_leeway, config.confidence_window)
            why = ClockCheck(target, tuple(clocks)).describe()
            waited = time.monotonic() - progressed
            if waited > config.clock_wait_timeout.total_seconds():
                raise NothingClosed(
                    f"{request.table}: no window closed for {waited:.0f} s "
                    f"(CDCGEN_CLOCK_WAIT_TIMEOUT_SECONDS): {why}"
                )
            if end is None:
                log.warning("%s cycle %d: nothing closed: %s", request.table, number, why)
            return None
        progressed = time.monotonic()
        attempt[:] = [(number, end)]
        run = ChangesRequest(
            request.table,
            Interval(latest, end),
            Mode.INCREMENTAL,
            run_id=f"{request.run_id}-c{number:05d}",
            dag_id=request.dag_id,
        )
        ports = adapters.ports(validate=validate)
        output = run_changes(run, ports, config, settings, cdc_ttl=adapters.log_table.ttl)
        return number, end, output

    def failed(number: int, exc: BaseException) -> None:
        log.warning("%s cycle %d failed, left to the next cycle: %s", request.table, number, exc)

    def stored_watermark() -> str | None:
        if totals.result is not None:
            return None  # the cycles' own
        watermark = (
            CqlCheckpointStore(client, config.checkpoint_keyspace).progress(request.table).watermark
        )
        return None if watermark is None else watermark.isoformat()

    try:
        cycles = follow(
            cycle, pace, is_terminal=is_terminal, now=lambda: datetime.now(UTC),
            sleep=time.sleep, on_failure=failed,
        )  # fmt: skip
        for done in cycles:
            if done is None:
                continue
            number, end, output = done
            totals.add(number, end, output)
            latest = end
            on_cycle(totals.total())
            log.info(
                "%s followed up to %s: %d row(s), watermark %s", request.table,
                end.isoformat(), output.rows_written, output.watermark,
            )  # fmt: skip
        return totals.total(stored_watermark())
    except ChangesInvalid as exc:
        if exc.output is not None and attempt:
            number, end = attempt[0]
            totals.add(number, end, exc.output)  # its status says it was not checkpointed
        exc.output = totals.total().ended(ChangesRunStatus.ROW_CHECKS_FAILED, str(exc))
        raise
    finally:
        client.close()
