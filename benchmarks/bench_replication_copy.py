"""A replication bootstrap's Spark copy against a raw driver copy of the same rows.

The Spark side is what ``cdcgen replication bootstrap`` runs:
:func:`cdcgen.replication.replication_run.bootstrap_sink` (the checks, the snapshot time
from the nodes' clocks, the copy's state on the sink, then the Spark job: token ranges
scanned by tasks on ``local[2]``, every row written as one unlogged batch keeping each
cell's write time and remaining TTL, each range recorded once acknowledged, and the
consistency point). The raw side is the generic way of copying a table with cassandra-driver
in one process: the same rows read by a paged full scan and written with
``execute_concurrent``, one ``INSERT`` per row, at the best of ``--concurrencies`` (each
tried, the best kept). It keeps no write time and records nothing. Target: the Spark copy >=
0.7x the raw copy's rows/s.

    .venv/bin/python benchmarks/bench_replication_copy.py [--rows 200000] [--keep-data] \
        [--repeat 2] [--output FILE]

The source table (``pk int, ck int, v text, n bigint, tags set<text>``: two atomic
columns, each cell at its own write time, a quarter of the rows with a TTL, half with
set elements) is loaded under the ``bench_rcopy_`` keyspaces; ``--keep-data`` reuses
rows loaded with the same count. Both sides copy into empty tables (truncated before
each run, untimed); the Spark session is started before either side (untimed, as a
spark-submit's start is not the copy's work). Each side runs ``--repeat`` times, taking
turns; the JSON holds the medians, every run's time and the settings.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from cdcgen.adapters.checkpoints import CqlCheckpointStore
from cdcgen.adapters.cql import CqlClient, connect
from cdcgen.config import PipelineConfig
from cdcgen.core.cdc_log import TableRef
from cdcgen.replication.cql_ports import cql_ports
from cdcgen.replication.replication_run import (
    Mode,
    Replication,
    ReplicationRequest,
    bootstrap_sink,
)
from cdcgen.replication.settings import ReplicationSettings
from cdcgen.spark_runtime.session import JobKind, job_session
from cdcgen_dev.paths import REPO_ROOT

PREFIX = "bench_rcopy_"
SOURCE = TableRef(f"{PREFIX}ks", "source")
SPARK_SINK = TableRef(f"{PREFIX}ks", "spark_sink")
RAW_SINK = TableRef(f"{PREFIX}ks", "raw_sink")
STATE = f"{PREFIX}state"
MARKER = f"{SOURCE.keyspace}.bench_loaded"
RESULTS = REPO_ROOT / "benchmarks" / "results" / "bench_replication_copy.json"
COLUMNS = "pk int, ck int, v text, n bigint, tags set<text>, PRIMARY KEY (pk, ck)"
PAGE_ROWS = 5_000


def create_tables(client: CqlClient) -> None:
    client.session.execute(
        f"CREATE KEYSPACE IF NOT EXISTS {SOURCE.keyspace} WITH replication = "
        "{'class': 'SimpleStrategy', 'replication_factor': 1}",
        timeout=120,
    )
    for table in (SOURCE, SPARK_SINK, RAW_SINK):
        client.session.execute(
            f"CREATE TABLE IF NOT EXISTS {table.qualified} ({COLUMNS})", timeout=120
        )
    client.session.execute(f"CREATE TABLE IF NOT EXISTS {MARKER} (k int PRIMARY KEY, rows bigint)")


def load(client: CqlClient, rows: int) -> None:
    """``rows`` rows, ``v`` and ``n`` each at its own write time, some with a TTL."""
    from cassandra.concurrent import execute_concurrent_with_args

    client.session.execute(f"TRUNCATE {SOURCE.qualified}", timeout=300)
    rng = random.Random(7)
    now_us = int(time.time() * 1_000_000)
    write_v = client.session.prepare(
        f"INSERT INTO {SOURCE.qualified} (pk, ck, v, tags) VALUES (?, ?, ?, ?) "
        "USING TIMESTAMP ? AND TTL ?"
    )
    write_n = client.session.prepare(
        f"UPDATE {SOURCE.qualified} USING TIMESTAMP ? SET n = ? WHERE pk = ? AND ck = ?"
    )
    for start in range(0, rows, 50_000):
        span = range(start, min(rows, start + 50_000))
        values = [
            (i // 8, i % 8, f"value-{i:09d}", {f"t{i % 5}", "x"} if i % 2 else None,
             now_us - rng.randrange(1, 10**9), 864_000 if i % 4 == 0 else 0)
            for i in span
        ]  # fmt: skip
        execute_concurrent_with_args(client.session, write_v, values, concurrency=128)
        numbers = [(now_us - rng.randrange(1, 10**9), i, i // 8, i % 8) for i in span]
        execute_concurrent_with_args(client.session, write_n, numbers, concurrency=128)
    client.session.execute(f"INSERT INTO {MARKER} (k, rows) VALUES (0, {rows})")


def loaded_rows(client: CqlClient) -> int | None:
    row = client.session.execute(f"SELECT rows FROM {MARKER} WHERE k = 0").one()
    return None if row is None else int(row.rows)


def raw_copy(client: CqlClient, concurrency: int) -> tuple[int, float]:
    """The source's rows into the raw sink: paged scan, ``execute_concurrent``; rows, s."""
    from cassandra.concurrent import execute_concurrent_with_args
    from cassandra.query import SimpleStatement

    insert = client.session.prepare(
        f"INSERT INTO {RAW_SINK.qualified} (pk, ck, v, n, tags) VALUES (?, ?, ?, ?, ?)"
    )
    scan = SimpleStatement(
        f"SELECT pk, ck, v, n, tags FROM {SOURCE.qualified}", fetch_size=PAGE_ROWS
    )
    began = time.perf_counter()
    result = client.session.execute(scan, timeout=120)
    copied = 0
    while True:
        page = list(result.current_rows)
        execute_concurrent_with_args(
            client.session, insert, page, concurrency=concurrency, raise_on_first_error=True
        )
        copied += len(page)
        if not result.has_more_pages:
            break
        result.fetch_next_page()
    return copied, time.perf_counter() - began


def spark_copy(config: PipelineConfig, client: CqlClient, run: int) -> tuple[int, float]:
    """``bootstrap_sink`` of the source into the Spark sink; rows and seconds."""
    job = Replication(SOURCE, SPARK_SINK)
    began = time.perf_counter()
    request = ReplicationRequest(job, f"bench-{run}", Mode.BOOTSTRAP)
    record = bootstrap_sink(config, cql_ports(config, client, client), request)
    return int(record.copied_rows or 0), time.perf_counter() - began


def truncate(client: CqlClient, table: TableRef) -> None:
    client.session.execute(f"TRUNCATE {table.qualified}", timeout=300)


def bench_config(contact_points: Sequence[str], tmp: Path) -> PipelineConfig:
    """The source's settings: real node clocks (``cql``), no waiting windows."""
    return PipelineConfig.from_env(
        {
            "CDCGEN_CONTACT_POINTS": ",".join(contact_points),
            "CDCGEN_CLOCK_SOURCE": "cql",
            "CDCGEN_TARGET_KEYSPACE": STATE,
            "CDCGEN_LAKE_PATH": str(tmp / "lake"),
            "CDCGEN_REPORT_DIR": str(tmp / "reports"),
            "CDCGEN_CONFIDENCE_WINDOW_SECONDS": "0",
            "CDCGEN_LEEWAY_SECONDS": "0",
        }
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--contact-points", default="127.0.0.1")
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument(
        "--concurrencies", default="128,512,1024", help="the raw copy's, each tried once"
    )
    parser.add_argument("--output", type=Path, default=RESULTS)
    parser.add_argument("--keep-data", action="store_true", help="reuse (and keep) loaded rows")
    args = parser.parse_args(argv)

    contact_points = tuple(args.contact_points.split(","))
    client = connect(contact_points)
    began = time.monotonic()
    create_tables(client)
    reused = args.keep_data and loaded_rows(client) == args.rows
    if not reused:
        load(client, args.rows)
    load_seconds = time.monotonic() - began
    settings = ReplicationSettings.from_env()
    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="bench-rcopy-") as tmp:
        config = bench_config(contact_points, Path(tmp))
        store = CqlCheckpointStore(client, STATE)
        store.ensure_schema()
        now = datetime.now(UTC)
        store.record_start(SOURCE, now - timedelta(days=1))  # the lake covers any snapshot
        store.save_watermark(SOURCE, now - timedelta(hours=1))
        started = time.perf_counter()
        spark = job_session(JobKind.REPLICATION_COPY, "cdcgen-bench-replication-copy")
        spark.range(4).repartition(2).count()  # warm up: the JVM and Python workers
        spark_start = time.perf_counter() - started

        raw_tries: dict[int, float] = {}
        for concurrency in (int(c) for c in args.concurrencies.split(",")):
            truncate(client, RAW_SINK)
            rows, seconds = raw_copy(client, concurrency)
            raw_tries[concurrency] = rows / seconds
        best = max(raw_tries, key=lambda c: raw_tries[c])
        times: dict[str, list[float]] = {"spark": [], "raw": []}
        copied: dict[str, int] = {}
        for run in range(args.repeat):
            for side in ("spark", "raw") if run % 2 == 0 else ("raw", "spark"):
                truncate(client, SPARK_SINK if side == "spark" else RAW_SINK)
                if side == "spark":
                    copied[side], seconds = spark_copy(config, client, run)
                else:
                    copied[side], seconds = raw_copy(client, best)
                times[side].append(seconds)
    if copied["spark"] != args.rows or copied["raw"] != args.rows:
        raise SystemExit(f"copied {copied}, expected {args.rows} rows on each side")
    spark_rate = args.rows / statistics.median(times["spark"])
    raw_rate = args.rows / statistics.median(times["raw"])
    figures: dict[str, Any] = {
        "benchmark": "replication_copy",
        "at": datetime.now(UTC).isoformat(timespec="seconds"),
        "rows": args.rows,
        "repeat": args.repeat,
        "spark_seconds": [round(t, 2) for t in times["spark"]],
        "raw_seconds": [round(t, 2) for t in times["raw"]],
        "spark_rows_per_s": round(spark_rate),
        "raw_rows_per_s": round(raw_rate),
        "ratio": round(spark_rate / raw_rate, 3),
        "target_ratio": 0.7,
        "raw_best_concurrency": best,
        "raw_rows_per_s_by_concurrency": {str(c): round(r) for c, r in raw_tries.items()},
        "copy_splits": settings.copy_splits,
        "copy_page_rows": settings.copy_page_rows,
        "copy_concurrency": settings.copy_concurrency,
        "spark": os.environ.get("CDCGEN_SPARK_MASTER", "local[2]"),
        "spark_start_seconds": round(spark_start, 1),
        "load_seconds": round(load_seconds, 1),
        "data_reused": reused,
        "load_before": round(load_before, 2),
    }
    client.close()
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(figures, indent=1) + "\n")
    print(json.dumps(figures, indent=1))
    return 0 if figures["ratio"] >= 0.7 else 2


if __name__ == "__main__":
    sys.exit(main())
