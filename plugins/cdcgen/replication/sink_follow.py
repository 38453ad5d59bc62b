"""A sink followed: an apply every few seconds as the lake's watermark moves, in one task.

The replication DAG's continuous mode: instead of one apply per changes run, the apply task
repeats :func:`cdcgen.replication.replication_run.replicate`
(:func:`cdcgen.core.follow_loop.follow`) until its deadline, so a change reaches the sink
about a cycle after its window's checkpoints made it part of the watermark. Each cycle is a
run with every guarantee of one (slices applied in order, the sink's consistency point saved
after each), under its own run id (``<run id>-c<cycle>``). A cycle that leaves rejected
changes ends the follow, as a run with rejections fails its task; its record carries them.
Until the lake has the table's first watermark (continuous mode started on a new table, the
changes' first cycle still running), a cycle applies nothing and the follow waits; a follow
that never sees one fails as a run would, naming the changes DAG to run.
"""

from __future__ import annotations

import logging
import time
from datetime import UTC, datetime

from cdcgen.adapters.errors import is_terminal
from cdcgen.config import PipelineConfig
from cdcgen.core.errors import LakeNotStarted
from cdcgen.core.follow_loop import FollowPace, follow
from cdcgen.core.replication_record import ApplyCycle, ReplicationRecord
from cdcgen.replication.replication_run import Mode, ReplicationPorts, ReplicationRequest, replicate

log = logging.getLogger(__name__)


def follow_replication(
    config: PipelineConfig, ports: ReplicationPorts, request: ReplicationRequest, pace: FollowPace
) -> ReplicationRecord:
    """Apply ``request.job`` cycle by cycle until ``pace.until``; the last cycle's record
    (its range, slices and operations are that cycle's), with the rows applied by all of
    them and every cycle listed."""
    if request.dry_run or request.mode is not Mode.APPLY:
        raise ValueError("a follow only applies: bootstrap or dry-run a sink with one run")
    cycles: list[ApplyCycle] = []
    waiting: list[LakeNotStarted] = []
    applied = 0
    last: ReplicationRecord | None = None

    def cycle(number: int) -> ReplicationRecord | None:
        run = ReplicationRequest(request.job, f"{request.run_id}-c{number:05d}", Mode.APPLY)
        try:
            record = replicate(config, ports, run)
        except LakeNotStarted as exc:
            log.info("%s cycle %d: %s; waiting for it", request.job.sink, number, exc)
            waiting[:] = [exc]  # the latest only: a long wait keeps no list
            return None
        cycles.append(
            ApplyCycle(
                number=number,
                consistent_until=record.consistent_until,
                finished_at=datetime.now(UTC).isoformat(),
                applied_log_rows=record.applied_log_rows,
            )
        )
        return record

    def failed(number: int, exc: BaseException) -> None:
        log.warning("%s cycle %d failed, left to the next cycle: %s", request.job.sink, number, exc)

    for record in follow(
        cycle, pace, is_terminal=is_terminal, now=lambda: datetime.now(UTC),
        sleep=time.sleep, on_failure=failed,
    ):  # fmt: skip
        if record is None:
            continue
        applied += record.applied_log_rows
        last = record
        if record.rejected_count:
            log.error("%s: changes rejected; the follow ends here", request.job.sink)
            break
    if last is None:  # no cycle applied: the lake never had a watermark of the table
        raise waiting[-1]
    return last.updated(run_id=request.run_id, applied_log_rows=applied, cycles=tuple(cycles))
