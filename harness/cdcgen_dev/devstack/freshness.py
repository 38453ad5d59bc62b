"""How soon a running stack publishes a generation the emulator commits: the figures of
the generations DAG's event-driven schedule.

A node joins the emulated raft cluster now; the generations DAG's watcher must see it,
the scheduler start an ``asset_triggered`` run, and the run publish it. Measured from
outside the stack: the commit is when the emulator returned, the publication when the
timestamp row is first read in the target keyspace (polled), the run's creation from the
REST API. Used by ``tests/e2e/test_fullstack.py`` and ``benchmarks/bench_freshness.py``.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from cdcgen.core.generation import SourceMode

if TYPE_CHECKING:
    from cdcgen.config import PipelineConfig
    from cdcgen_dev.devstack.rest import AirflowApi

#: The run type of a run an Asset event started (``DagRunType.ASSET_TRIGGERED``).
ASSET_TRIGGERED = "asset_triggered"


@dataclass(frozen=True)
class Freshness:
    """One generation, from its commit to its publication (seconds)."""

    generation: str
    timestamp: str
    run_id: str
    run_type: str
    #: Commit to the run's creation by the scheduler (the watcher's event, then the
    #: scheduler's loop).
    commit_to_run: float
    #: Commit to the timestamp row consumers read.
    commit_to_published: float
    #: The generation's timestamp (in the future when it is committed) to that row.
    timestamp_to_published: float

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def _parse(moment: str) -> datetime:
    return datetime.fromisoformat(moment.replace("Z", "+00:00"))


def quiet(
    api: AirflowApi,
    dag_id: str,
    *,
    every_minutes: int = 10,
    margin: timedelta = timedelta(minutes=2),
    timeout: float = 900.0,
) -> None:
    """Returns once no run of ``dag_id`` is going and its next cron tick (every
    ``every_minutes``) is at least ``margin`` away: the run a generation committed now
    gets is then the watcher's, and starts at once."""
    now = datetime.now(UTC)
    tick = now.replace(second=0, microsecond=0) + timedelta(
        minutes=every_minutes - now.minute % every_minutes
    )
    if tick - now < margin:
        time.sleep((tick - now).total_seconds() + 5)  # the tick's run is then created
    api.wait_for_runs(dag_id, [r["dag_run_id"] for r in api.runs(dag_id)], timeout=timeout)


def measure(
    api: AirflowApi,
    config: PipelineConfig,
    dag_id: str,
    *,
    seed: int,
    timeout: float = 900.0,
    poll: float = 0.25,
) -> Freshness:
    """Commits a generation (a node joins now) and waits for its publication and for the
    run that made it to finish; raises if none did within ``timeout`` seconds."""
    from cdcgen.adapters.cql import client_for
    from cdcgen.adapters.publisher import CqlDescriptionPublisher
    from cdcgen_dev.emulator import SandboxCluster

    before = {r["dag_run_id"] for r in api.runs(dag_id)}
    with client_for(config) as client:
        cluster = SandboxCluster.from_config(client, config)
        joined = cluster.join_node(SourceMode.RAFT, seed=seed, vnodes=8)
        committed = datetime.now(UTC)
        assert joined.generation is not None
        timestamp = joined.generation.timestamp
        publisher = CqlDescriptionPublisher(client, config)
        deadline = time.monotonic() + timeout
        while not publisher.is_published(timestamp):
            if time.monotonic() > deadline:
                raise TimeoutError(f"{joined.generation.id} unpublished after {timeout:.0f} s")
            time.sleep(poll)
        published = datetime.now(UTC)
    new = sorted(
        (r for r in api.runs(dag_id) if r["dag_run_id"] not in before),
        key=lambda r: r["queued_at"] or r["logical_date"] or "",
    )
    if not new:
        raise AssertionError(f"generation {timestamp.isoformat()} published by no new run")
    first = new[0]
    return Freshness(
        generation=str(joined.generation.id),
        timestamp=timestamp.isoformat(),
        run_id=first["dag_run_id"],
        run_type=first["run_type"],
        commit_to_run=(_parse(first["queued_at"]) - committed).total_seconds(),
        commit_to_published=(published - committed).total_seconds(),
        timestamp_to_published=(published - timestamp).total_seconds(),
    )
