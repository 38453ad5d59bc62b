"""Continuous mode's freshness: how long after its write a row is in the lake, and in the sink.

An emulated raft cluster on the sandbox's Cassandra (keyspaces under ``bench_follow_``)
with a CDC table ``orders``, the product's default leeway (5 s) and confidence window
(30 s), and a sink table in a keyspace of the same Cassandra. The changes job follows
the table on a Spark standalone cluster started for the run (a master and two workers
of one core on loopback: the long-lived Spark server), spark-submitted as the DAG
submits it (the job kind's ``conf``, the configuration as ``CDCGEN_*`` variables;
``--follow-until``, ``--every``, default ``CDCGEN_CHANGES_FOLLOW_EVERY_SECONDS``).
Once its first cycle is in the lake, the sink is bootstrapped (``cdcgen replication
bootstrap``, the table still empty), and a process of its own follows the sink
(:func:`cdcgen.replication.sink_follow.follow_replication`) until 30 s after the changes'
follow ends. Then the emulator writes a steady workload (``--rate`` writes/s, every kind
of change) for at least ``--minutes``: until the changes' follow has a margin left
(leeway + confidence window + two cycles + 20 s) to close its last write.

Each row of the lake has its CDC time (``cdc$time``, as the log holds it): its lake
freshness is the ``finished_at`` of the first changes cycle whose ``closed_until`` is
past that time, minus the time; its sink freshness the same with the first apply cycle
whose ``consistent_until`` is past it (:mod:`cdcgen_dev.follow_freshness`). The run
fails (exit status 1) unless the lake holds exactly the log rows the workload wrote (the
same count, the same CDC times) and the sink table equals the source table row for row
with the write times, or if a row was never covered by a cycle. The Spark cluster's
start, the first cycle and the bootstrap are set-up, not measured.

    .venv/bin/python benchmarks/bench_follow.py [--minutes 10] [--rate 20] --output FILE
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from uuid import UUID

PREFIX = "bench_follow_"
KEYSPACE = f"{PREFIX}data"
SINK_KEYSPACE = f"{PREFIX}sink"
TABLE_NAME = "orders"
#: Spark's start, the follow's first cycle and the bootstrap must fit in this.
SETUP_ALLOWANCE = timedelta(minutes=4)
#: The sink's follow outlives the changes' by this, to apply their last cycle.
REPLICATION_TAIL = timedelta(seconds=30)
DDL_TIMEOUT = 120.0


def margin(leeway: timedelta, confidence: timedelta, every: timedelta) -> timedelta:
    """How long the changes' follow must go on after the last write to close it: the
    clocks past it by leeway + confidence window, a cycle to start, one to spare, and
    the cycle's own work."""
    return leeway + confidence + 2 * every + timedelta(seconds=20)


def replication_child(until: datetime, every: float, output: Path) -> int:
    """The sink followed until ``until`` (configuration from ``CDCGEN_*``); its record to
    ``output``."""
    import logging

    from cdcgen.adapters.cql import connect
    from cdcgen.config import PipelineConfig
    from cdcgen.core.cdc_log import TableRef
    from cdcgen.core.follow_loop import FollowPace
    from cdcgen.replication.cql_ports import cql_ports
    from cdcgen.replication.replication_run import Mode, Replication, ReplicationRequest
    from cdcgen.replication.settings import ReplicationSettings
    from cdcgen.replication.sink_follow import follow_replication

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s %(message)s")
    config = PipelineConfig.from_env()
    client = connect(config.contact_points)
    try:
        job = Replication(TableRef(KEYSPACE, TABLE_NAME), TableRef(SINK_KEYSPACE, TABLE_NAME))
        ports = cql_ports(
            config, client, client, ReplicationSettings.from_env(), sink_config=config
        )
        request = ReplicationRequest(job, "bench-follow-apply", Mode.APPLY)
        record = follow_replication(
            config, ports, request, FollowPace(until, timedelta(seconds=every))
        )
    finally:
        client.close()
    output.write_text(json.dumps(record.to_json(), indent=1) + "\n", encoding="utf-8")
    return 0 if not record.rejected_count else 1


def drop_prefixed(client: Any) -> None:
    """Every keyspace an earlier run left (the emulator's, the state's, data, sink)."""
    client.cluster.refresh_schema_metadata()
    for keyspace in list(client.cluster.metadata.keyspaces):
        if keyspace.startswith(PREFIX):
            client.session.execute(f"DROP KEYSPACE IF EXISTS {keyspace}", timeout=DDL_TIMEOUT)


def wait_for_lake(config: Any, client: Any, table: Any, job: Any, deadline: float) -> None:
    """Until the changes' follow checkpointed its first cycle (the lake covers the table
    since the follow's start, up to a watermark)."""
    from cdcgen.adapters.checkpoints import CqlCheckpointStore
    from cdcgen.replication.replication_run import lake_coverage

    checkpoints = CqlCheckpointStore(client, config.checkpoint_keyspace)
    while time.monotonic() < deadline:
        if job.poll() is not None:
            raise SystemExit(f"the changes follow ended early (exit status {job.returncode})")
        lake = lake_coverage(checkpoints, table)
        if lake.since is not None and lake.until is not None:
            return
        time.sleep(2)
    raise SystemExit("the changes follow's first cycle did not reach the lake in time")


def contents(client: Any, table: str) -> list[tuple[Any, ...]]:
    rows = client.session.execute(
        f"SELECT pk, ck, v, tags, WRITETIME(v) FROM {table}", timeout=DDL_TIMEOUT
    )
    return sorted(tuple(r) for r in rows)


def run(args: argparse.Namespace) -> dict[str, Any]:
    from cdcgen.adapters.cql import connect
    from cdcgen.airflow.spark_jobs import CHANGES_EXTRACT
    from cdcgen.changes.layout import read_delta, table_root
    from cdcgen.changes.settings import ChangesSettings
    from cdcgen.core.cdc_log import TableRef, micros_of_timeuuid
    from cdcgen.core.changes_result import ChangesRunResult
    from cdcgen.core.generation import SourceMode
    from cdcgen.core.replication_record import ReplicationRecord
    from cdcgen.core.time import floor_ms, from_micros
    from cdcgen.spark_runtime.session import submit_env
    from cdcgen_dev.emulator import SandboxCluster, WorkloadSpec, create_cdc_table, orders_table
    from cdcgen_dev.emulator import run_workload as emulate
    from cdcgen_dev.emulator.log_schema import base_table_cql
    from cdcgen_dev.follow_freshness import Covered, freshness_seconds, summary
    from cdcgen_dev.paths import REPO_ROOT
    from cdcgen_dev.sandbox import sandbox_config
    from cdcgen_dev.spark_cluster import spawn, standalone, stop_group

    base = REPO_ROOT / "var" / "bench-follow"
    shutil.rmtree(base, ignore_errors=True)
    base.mkdir(parents=True)
    config = sandbox_config(  # the product's leeway and confidence window, untouched
        PREFIX,
        contact_points=("127.0.0.1",),
        source_mode=SourceMode.RAFT,
        lake_path=base / "lake",
        report_dir=base / "reports",
    )
    settings = ChangesSettings.from_env()
    every = timedelta(seconds=args.every) if args.every else settings.follow_every
    leeway, confidence = config.generation_leeway, config.confidence_window
    table = TableRef(KEYSPACE, TABLE_NAME)
    sink = TableRef(SINK_KEYSPACE, TABLE_NAME)
    minutes = timedelta(minutes=args.minutes)
    began = time.monotonic()

    client = connect(config.contact_points)
    try:
        drop_prefixed(client)
        cluster = SandboxCluster.from_config(client, config)
        cluster.setup()
        hour_ago = datetime.now(UTC) - timedelta(hours=1)
        cluster.join_node(SourceMode.RAFT, shards=2, vnodes=8, seed=1, now=hour_ago)
        create_cdc_table(cluster, orders_table(KEYSPACE, TABLE_NAME))
        client.session.execute(
            f"CREATE KEYSPACE {SINK_KEYSPACE} WITH replication = "
            "{'class': 'SimpleStrategy', 'replication_factor': 1}",
            timeout=DDL_TIMEOUT,
        )
        client.session.execute(
            base_table_cql(orders_table(SINK_KEYSPACE, TABLE_NAME)), timeout=DDL_TIMEOUT
        )
        env = {k: v for k, v in os.environ.items() if not k.startswith("CDCGEN_")}
        env.update({**submit_env(), **config.to_env(), **settings.to_env()})
        with standalone(base / "spark", workers=2) as spark:
            start = floor_ms(datetime.now(UTC) - timedelta(minutes=1))
            allowance = timedelta(seconds=args.setup_seconds)
            until = floor_ms(
                datetime.now(UTC) + allowance + minutes + margin(leeway, confidence, every)
            )
            command = [str(Path(sys.executable).with_name("spark-submit"))]
            command += ["--master", spark.master_url, "--name", CHANGES_EXTRACT.name]
            for key, value in CHANGES_EXTRACT.conf.items():
                command += ["--conf", f"{key}={value}"]
            command += [
                CHANGES_EXTRACT.application,
                *("--table", table.qualified, "--interval-start", start.isoformat()),
                *("--follow-until", until.isoformat()),
                *("--every", str(every.total_seconds())),
                *("--run-id", "bench-follow", "--dag-id", "bench_follow"),
                *("--output", str(base / "changes.json")),
            ]
            changes_job = spawn(command, env, base / "changes-follow.log")
            replication: subprocess.Popen[bytes] | None = None
            try:
                wait_for_lake(
                    config, client, table, changes_job,
                    time.monotonic() + allowance.total_seconds(),
                )  # fmt: skip
                cdcgen = str(Path(sys.executable).with_name("cdcgen"))
                subprocess.run(
                    [cdcgen, "replication", "bootstrap", "--table", table.qualified,
                     "--sink-table", sink.qualified, "--run-id", "bench-follow-bootstrap"],
                    env={**env, "CDCGEN_REPLICATION_COPY_SPLITS": "16"},
                    check=True, timeout=600, stdout=subprocess.DEVNULL,
                )  # fmt: skip
                replication = spawn(
                    [sys.executable, str(Path(__file__).resolve()), "--replication-child",
                     (until + REPLICATION_TAIL).isoformat(), str(every.total_seconds()),
                     str(base / "replication.json")],
                    env, base / "replication-follow.log",
                )  # fmt: skip
                setup_seconds = time.monotonic() - began
                left = until - margin(leeway, confidence, every) - datetime.now(UTC)
                if left < minutes:
                    raise SystemExit(
                        f"the set-up took {setup_seconds:.0f} s: {left} left for the "
                        f"workload, less than {minutes}"
                    )
                spec = WorkloadSpec(
                    keyspace=KEYSPACE, table=TABLE_NAME, rate=args.rate, duration=left,
                    keys=args.keys, seed=11, keep_writes=True,
                )  # fmt: skip
                print(f"workload: {left.total_seconds():.0f} s at {args.rate}/s", flush=True)
                report = emulate(cluster, spec)
                print(json.dumps(report.to_json()), flush=True)
                wait = (until + REPLICATION_TAIL - datetime.now(UTC)).total_seconds() + 300
                if changes_job.wait(timeout=wait) != 0:
                    raise SystemExit(f"the changes follow failed ({changes_job.returncode})")
                if replication.wait(timeout=wait) != 0:
                    raise SystemExit(f"the sink's follow failed ({replication.returncode})")
            finally:
                for process in (changes_job, replication):
                    if process is not None:
                        stop_group(process)

        changes = ChangesRunResult.from_json(json.loads((base / "changes.json").read_text()))
        applied = ReplicationRecord.from_json(json.loads((base / "replication.json").read_text()))
        # Every written row in the lake: as many log rows, the same CDC times.
        lake = read_delta(table_root(config.lake_path, table), columns=["cdc$time"])
        lake_times = [str(value) for value in lake.column("cdc$time").to_pylist()]
        kept = {str(write.time) for write in report.kept}
        problems = []
        if report.failed or report.rejected:
            problems.append(f"the workload failed {report.failed}, refused {report.rejected}")
        if len(lake_times) != report.log_rows or set(lake_times) != kept:
            problems.append(
                f"the lake holds {len(lake_times)} rows of {len(set(lake_times))} writes; "
                f"the workload wrote {report.log_rows} of {len(kept)}"
            )
        source_rows, sink_rows = contents(client, table.qualified), contents(client, sink.qualified)
        if source_rows != sink_rows:
            differ = len(set(source_rows) ^ set(sink_rows))
            problems.append(
                f"the sink holds {len(sink_rows)} rows, the source {len(source_rows)} "
                f"({differ} differ)"
            )
    finally:
        client.close()
    if problems:
        raise SystemExit("; ".join(problems))

    def when(text: str | None) -> datetime:
        if not text:
            return datetime.min.replace(tzinfo=UTC)  # never covers a row
        return datetime.fromisoformat(text)

    written = [from_micros(micros_of_timeuuid(UUID(text))) for text in lake_times]
    to_lake = freshness_seconds(
        written, [Covered(when(c.closed_until), when(c.finished_at)) for c in changes.cycles]
    )
    to_sink = freshness_seconds(
        written, [Covered(when(c.consistent_until), when(c.finished_at)) for c in applied.cycles]
    )
    return {
        "write_to_lake": summary(to_lake),
        "write_to_sink": summary(to_sink),
        "log_rows": len(written),
        "writes": len(kept),
        "source_rows": len(source_rows),
        "changes_cycles": len(changes.cycles),
        "apply_cycles": len(applied.cycles),
        "every_seconds": every.total_seconds(),
        "leeway_seconds": leeway.total_seconds(),
        "confidence_window_seconds": confidence.total_seconds(),
        "workload_minutes": round(report.elapsed_seconds / 60, 2),
        "rate": args.rate,
        "setup_seconds": round(setup_seconds, 1),
        "spark": "standalone, 2 workers x 1 core",
        "seconds": round(time.monotonic() - began, 1),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=10.0, help="the workload, at least")
    parser.add_argument("--rate", type=float, default=20.0, help="writes per second")
    parser.add_argument("--keys", type=int, default=2000)
    parser.add_argument("--every", type=float, default=None, help="cycle period (s)")
    parser.add_argument(
        "--setup-seconds", type=float, default=SETUP_ALLOWANCE.total_seconds(),
        help="allowed for Spark's start, the first cycle and the bootstrap",
    )  # fmt: skip
    parser.add_argument("--output", type=Path)
    parser.add_argument("--replication-child", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.replication_child:
        until, every, output = args.replication_child
        return replication_child(datetime.fromisoformat(until), float(every), Path(output))

    from cdcgen_dev.cassandra.sharing import SandboxUser

    user = SandboxUser()
    user.use_running()  # a lease: never stops a sandbox others use
    try:
        result = run(args)
    finally:
        user.release()
    text = json.dumps(result, indent=1, sort_keys=True)
    if args.output:
        args.output.write_text(text + "\n", encoding="utf-8")
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
