"""Replication's apply: rows/s into a sink, and its peak memory, over growing backlogs.

A backlog of ``--rows`` changes of an ``orders`` table (``pk int, ck int, v text, tags
set<text>``) is written straight into a lake table with the changes pipeline's layout
(inserts with a set, updates, row and partition deletes, each its own CDC batch, spread
over an hour in 256 streams), then applied to an empty sink table of the sandbox, as a
replication run applies it: in time slices of ``CDCGEN_REPLICATION_SLICE_ROWS``, one
single-partition batch per CDC batch. Each backlog size is applied in a process of its
own, so its peak RSS is its own.

The first backlog is applied once more on ``--spark-tasks`` local Spark tasks
(``CDCGEN_REPLICATION_APPLY_TASKS``: each slice spread over them by partition key);
its peak RSS is the driver's alone.

Beside it, the raw write floor: the same number of rows written as plain prepared
INSERTs with ``execute_concurrent`` at the best of a few concurrencies, from one process
(what one cassandra-driver process can write into this sandbox); and the sink's
ceiling: the same rows packed as the apply packs them (unlogged batches of
``CDCGEN_REPLICATION_REQUEST_BATCHES`` single-partition inserts), from one process and
from ``--ceiling-processes`` at once, the best rate any of them reaches: what the node
takes from any client, so what no apply can beat here.

    .venv/bin/python benchmarks/bench_replication_apply.py --rows 1000000 4000000 \
        --output FILE

The run's ``make bench`` compares the apply's rows/s with the changes extraction's.
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from cdcgen.adapters.cql import CqlClient, connect
from cdcgen.core.cdc_log import TableRef
from cdcgen.core.replication_plan import ApplyPlan
from cdcgen_dev.paths import REPO_ROOT

KEYSPACE = "bench_replication"
SOURCE = TableRef(KEYSPACE, "orders")
SINK = TableRef(KEYSPACE, "orders_sink")
RAW = TableRef(KEYSPACE, "orders_raw")
START = datetime(2026, 11, 1, 10, 0, tzinfo=UTC)
SPAN = timedelta(hours=1)
STREAMS = 256
KEYS = 200_000
CHUNK = 250_000
COLUMNS = "pk int, ck int, v text, tags set<text>, PRIMARY KEY (pk, ck)"
#: Operation codes and their share of the backlog.
MIX = ((2, 0.60), (1, 0.25), (3, 0.10), (4, 0.05))


def write_backlog(root: Path, rows: int, seed: int = 7) -> None:
    """``rows`` changes in a lake table at ``root``, written a chunk at a time."""
    import numpy as np
    import pyarrow as pa
    from deltalake import write_deltalake

    rng = np.random.default_rng(seed)
    streams = [
        uuid.UUID(int=random.Random(seed + s).getrandbits(128)).bytes for s in range(STREAMS)
    ]
    codes = np.array([code for code, _ in MIX], dtype=np.int8)
    weights = np.array([share for _, share in MIX])
    span_us = int(SPAN.total_seconds() * 1_000_000)
    start_us = int(START.timestamp() * 1_000_000)
    for first in range(0, rows, CHUNK):
        n = min(CHUNK, rows - first)
        written = np.sort(rng.integers(0, span_us, n)) + start_us
        operation = rng.choice(codes, n, p=weights / weights.sum())
        pk = rng.integers(0, KEYS, n).astype(np.int32)
        ck = rng.integers(0, 100, n).astype(np.int32)
        stream = rng.integers(0, STREAMS, n)
        insert = operation == 2
        writes = (operation == 1) | insert
        v = [
            f"value-{i}" if w else None
            for i, w in zip(range(first, first + n), writes, strict=True)
        ]
        tags = [["a", f"t{i % 7}"] if x else None for i, x in enumerate(insert)]
        times = [str(uuid.uuid1(node=i, clock_seq=0)) for i in range(first, first + n)]
        stamp = pa.array(written, pa.int64()).cast(pa.timestamp("us", tz="UTC"))
        days = [datetime.fromtimestamp(w / 1e6, UTC).date().isoformat() for w in written[[0, -1]]]
        table = pa.table(
            {
                "cdc$stream_id": pa.array([streams[s] for s in stream], pa.binary()),
                "cdc$time": pa.array(times, pa.string()),
                "cdc$batch_seq_no": pa.array(np.zeros(n, np.int32)),
                "cdc$operation": pa.array(operation),
                "cdc$ttl": pa.array([None] * n, pa.int64()),
                "cdc$end_of_batch": pa.array(np.ones(n, bool)),
                "pk": pa.array(pk),
                "ck": pa.array(ck, mask=operation == 4),  # a partition delete has none
                "v": pa.array(v, pa.string()),
                "cdc$deleted_v": pa.array([None] * n, pa.bool_()),
                "tags": pa.array(tags, pa.list_(pa.string())),
                "cdc$deleted_tags": pa.array(insert),
                "cdc$deleted_elements_tags": pa.array([None] * n, pa.list_(pa.string())),
                "write_time": stamp,
                "operation_name": pa.array(["x"] * n, pa.string()),
                "base_token": pa.array(np.zeros(n, np.int64)),
                "date": pa.array([days[0]] * n, pa.string()),
                "generation": pa.array(["20261101T090000.000Z"] * n, pa.string()),
                "window": pa.array(["20261101T100000.000Z_20261101T110000.000Z"] * n),
                "bucket": pa.array((stream % 8).astype(np.int32)),
            }
        )
        write_deltalake(
            str(root), table, mode="append", partition_by=["date", "generation", "window", "bucket"]
        )


def tables(client: CqlClient) -> None:
    client.session.execute(
        f"CREATE KEYSPACE IF NOT EXISTS {KEYSPACE} WITH replication = "
        "{'class': 'SimpleStrategy', 'replication_factor': 1}",
        timeout=120,
    )
    for table in (SOURCE, SINK, RAW):
        client.session.execute(f"DROP TABLE IF EXISTS {table}", timeout=120)
        client.session.execute(f"CREATE TABLE {table} ({COLUMNS})", timeout=120)


def apply_once(root: Path, rows: int, tasks: int = 0) -> dict[str, Any]:
    """In this process, or on ``tasks`` local Spark tasks: the backlog applied to the
    empty sink table."""
    from cdcgen.config import PipelineConfig
    from cdcgen.replication.apply import SinkApplier
    from cdcgen.replication.cql_ports import cql_ports
    from cdcgen.replication.replication_run import Replication, shape_of
    from cdcgen.replication.settings import ReplicationSettings

    client = connect(("127.0.0.1",))
    try:
        job = Replication(SOURCE, SINK)
        config = PipelineConfig.from_env(
            {
                "CDCGEN_CONTACT_POINTS": "127.0.0.1",
                "CDCGEN_LAKE_PATH": str(root.parent.parent),
                # the ports hold the lake's checkpoints, which the apply alone never reads
                "CDCGEN_STATE_KEYSPACE": KEYSPACE,
            }
        )
        settings = ReplicationSettings.from_env().with_overrides(apply_tasks=tasks)
        ports = cql_ports(config, client, client, settings, sink_config=config)
        state = ports.states.state(SOURCE, SINK)
        state.ensure_schema()
        shape = shape_of(ports, job)
        elsewhere = ports.spark.slice_apply(job, shape, "bench")
        applier = SinkApplier(ports.writes, shape, state, "bench", settings, elsewhere=elsewhere)
        plan = ApplyPlan(START, START + SPAN, None)
        began = time.perf_counter()
        cpu = time.process_time()
        outcome = applier.apply(ports.lake, plan)
        seconds = time.perf_counter() - began
        return {
            "rows": rows,
            "spark_tasks": tasks,
            "applied_log_rows": outcome.log_rows,
            "rejected": len(outcome.rejected),
            "seconds": round(seconds, 2),
            "cpu_seconds": round(time.process_time() - cpu, 2),
            "rows_per_s": round(outcome.log_rows / seconds),
            "slices": outcome.slices,
            "slice_rows": settings.slice_rows,
            "largest_slice": outcome.largest_slice,
            "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
        }
    finally:
        client.close()


def raw_writes(rows: int) -> dict[str, Any]:
    """The floor: ``rows`` plain INSERTs from one process, best of a few concurrencies."""
    from cassandra import OperationTimedOut
    from cassandra.concurrent import execute_concurrent_with_args

    client = connect(("127.0.0.1",))
    try:
        insert = client.session.prepare(
            f"INSERT INTO {RAW} (pk, ck, v, tags) VALUES (?, ?, ?, ?) USING TIMESTAMP ?"
        )
        best: dict[str, Any] = {}
        timed_out: list[int] = []  # more in flight than the node answers in time
        for concurrency in (32, 64, 128, 256):
            params = [(i % KEYS, i % 100, f"value-{i}", {"a"}, 1 + i) for i in range(rows)]
            began = time.perf_counter()
            try:
                execute_concurrent_with_args(
                    client.session, insert, params, concurrency=concurrency
                )
            except OperationTimedOut:
                timed_out.append(concurrency)
                continue
            rate = rows / (time.perf_counter() - began)
            if rate > best.get("rows_per_s", 0):
                best = {"rows": rows, "concurrency": concurrency, "rows_per_s": round(rate)}
        return {**best, "timed_out_at_concurrency": timed_out}
    finally:
        client.close()


def batched_writes(rows: int, offset: int, concurrency: int) -> float:
    """``rows`` inserts in unlogged batches of the apply's size, from this process;
    returns the seconds they took."""
    from cassandra.concurrent import execute_concurrent
    from cassandra.query import BatchStatement, BatchType

    from cdcgen.replication.settings import ReplicationSettings

    per_request = ReplicationSettings.from_env().request_batches
    client = connect(("127.0.0.1",))
    try:
        insert = client.session.prepare(
            f"INSERT INTO {RAW} (pk, ck, v, tags) VALUES (?, ?, ?, ?) USING TIMESTAMP ?"
        )
        requests = []
        for first in range(offset, offset + rows, per_request):
            batch = BatchStatement(batch_type=BatchType.UNLOGGED)
            for i in range(first, min(first + per_request, offset + rows)):
                batch.add(insert, (i % KEYS, i % 100, f"value-{i}", {"a"}, 1 + i))
            requests.append((batch, None))
        began = time.perf_counter()
        execute_concurrent(client.session, requests, concurrency=concurrency)
        return time.perf_counter() - began
    finally:
        client.close()


def sink_ceiling(rows: int, processes: Sequence[int]) -> dict[str, Any]:
    """The best rate ``rows`` batched inserts reach, split over 1 and more processes
    (each started before any writes, so their runs overlap), at a few concurrencies."""
    runs = []
    for count in processes:
        for concurrency in (32, 128):
            share = rows // count
            command = [sys.executable, __file__, "--ceiling-child", str(share)]
            children = [
                subprocess.Popen(
                    [*command, str(n * share), str(concurrency)], stdout=subprocess.PIPE, text=True
                )
                for n in range(count)
            ]
            seconds = [float(child.communicate()[0].strip().splitlines()[-1]) for child in children]
            if any(child.returncode for child in children):
                raise RuntimeError(f"a ceiling writer failed ({count} processes)")
            rate = share * count / max(seconds)
            runs.append({"processes": count, "concurrency": concurrency, "rows_per_s": round(rate)})
            print(json.dumps(runs[-1]), flush=True)
    best = max(runs, key=lambda r: r["rows_per_s"])
    return {"rows": rows, **best, "runs": runs}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, nargs="+", default=[1_000_000, 4_000_000])
    parser.add_argument("--raw-rows", type=int, default=200_000)
    parser.add_argument(
        "--spark-tasks", type=int, default=2,
        help="also apply the first backlog on this many local Spark tasks (0: do not)",
    )  # fmt: skip
    parser.add_argument(
        "--ceiling-processes", type=int, nargs="*", default=[1, 2],
        help="the sink's ceiling from this many writer processes at once (none: skip it)",
    )  # fmt: skip
    parser.add_argument("--output", type=Path, default=None)
    parser.add_argument("--ceiling-child", type=int, nargs=3, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--child", type=Path, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.ceiling_child is not None:  # one writer of the ceiling
        print(batched_writes(*args.ceiling_child))
        return 0
    if args.child is not None:  # one backlog, in a process of its own
        print(json.dumps(apply_once(args.child, args.rows[0], args.spark_tasks)))
        return 0
    client = connect(("127.0.0.1",))
    results: dict[str, Any] = {"when": datetime.now(UTC).isoformat(timespec="seconds")}
    with tempfile.TemporaryDirectory(prefix="bench-replication-", dir=REPO_ROOT / "var") as tmp:
        try:
            tables(client)
            results["raw_write_floor"] = raw_writes(args.raw_rows)
            if args.ceiling_processes:
                results["sink_ceiling"] = sink_ceiling(args.raw_rows, args.ceiling_processes)
            runs = []
            spread = [(args.rows[0], args.spark_tasks)] if args.spark_tasks else []
            for rows, tasks in [(rows, 0) for rows in args.rows] + spread:
                root = Path(tmp) / f"lake-{rows}" / "changes" / SOURCE.qualified
                if not root.exists():
                    write_backlog(root, rows)
                client.session.execute(f"TRUNCATE {SINK}", timeout=300)
                command = [sys.executable, __file__, "--rows", str(rows), "--child", str(root)]
                done = subprocess.run(
                    [*command, "--spark-tasks", str(tasks)], capture_output=True, text=True
                )
                if done.returncode != 0:  # its error, not only its exit status
                    sys.stderr.write(done.stderr)
                    raise SystemExit(f"the apply of {rows} rows failed (exit {done.returncode})")
                runs.append(json.loads(done.stdout.strip().splitlines()[-1]))
                print(json.dumps(runs[-1]), flush=True)
            results["apply"] = [run for run in runs if not run["spark_tasks"]]
            results["apply_on_spark"] = [run for run in runs if run["spark_tasks"]]
        finally:
            client.close()
    text = json.dumps(results, indent=1)
    print(text)
    if args.output is not None:
        args.output.write_text(text + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
