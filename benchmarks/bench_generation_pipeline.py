"""Benchmark: one large generation through extract -> validate -> publish, on this machine.

Default size: 100 nodes x 64 shards x 256 vnodes = 25,600 entries, 1,638,400 streams.
Stages (seconds each): build the generation (vectorized core builder), flatten it to
columns, start Spark, extract (pyarrow Parquet partition + description JSON, read back
and counted by Spark), validate (the three GX suites on Spark, with the ring and the
previous generation known, Data Docs rendered), and publish to the local Cassandra when
one answers on 127.0.0.1:9042 (skipped otherwise). Peak memory is sampled every 0.2 s
for this process and its children (the Spark JVM), and reported with ``ru_maxrss``.

    .venv/bin/python benchmarks/bench_generation_pipeline.py [--nodes 100 --vnodes 256
        --shards 64] [--no-publish] [--compare-create-dataframe] [--record FILE]

Prints one JSON line; ``--record FILE`` appends it to FILE too (recorded runs:
benchmarks/results/generation_pipeline.jsonl).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import resource
import shutil
import socket
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import psutil

from cdcgen.config import PipelineConfig
from cdcgen.core.generation_arrays import build_generation_arrays
from cdcgen.core.tokens import MAX_TOKEN, MIN_TOKEN
from cdcgen.core.topology import Node
from cdcgen.extract.description_columns import DescriptionColumns
from cdcgen.extract.lake import write_generation
from cdcgen.extract.streams_table import flatten_generation

os.environ.setdefault("GX_ANALYTICS_ENABLED", "false")
T_PREVIOUS = datetime(2026, 11, 22, 0, 0, tzinfo=UTC)
T_CURRENT = T_PREVIOUS + timedelta(minutes=1, seconds=5)


class MemorySampler:
    """Peak RSS of this process plus all its children (the JVM), sampled in a thread."""

    def __init__(self, interval: float = 0.2) -> None:
        self.interval = interval
        self.peak_total = 0
        self.peak_jvm = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        me = psutil.Process()
        while not self._stop.is_set():
            try:
                children = sum(c.memory_info().rss for c in me.children(recursive=True))
                total = me.memory_info().rss + children
            except psutil.Error:
                continue
            self.peak_jvm = max(self.peak_jvm, children)
            self.peak_total = max(self.peak_total, total)
            self._stop.wait(self.interval)

    def __enter__(self) -> MemorySampler:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join()


def cpu_time() -> float:
    """CPU seconds (user + system) of this process and its live children (the JVM).

    Reported beside wall time: on a shared machine wall time measures the neighbours too.
    """
    me = psutil.Process()
    total = sum(me.cpu_times()[:2])
    for child in me.children(recursive=True):
        with suppress(psutil.Error):
            total += sum(child.cpu_times()[:2])
    return total


def make_nodes(count: int, shards: int, vnodes: int, seed: int) -> list[Node]:
    rng = random.Random(seed)
    ring: set[int] = set()
    while len(ring) < count * vnodes:
        ring.add(rng.randint(MIN_TOKEN, MAX_TOKEN))
    tokens = list(ring)
    return [
        Node(f"node{i}", shards, 12, tuple(tokens[i * vnodes : (i + 1) * vnodes]))
        for i in range(count)
    ]


def cassandra_reachable(host: str = "127.0.0.1", port: int = 9042) -> bool:
    with socket.socket() as probe:
        probe.settimeout(1.0)
        return probe.connect_ex((host, port)) == 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=100)
    parser.add_argument("--vnodes", type=int, default=256)
    parser.add_argument("--shards", type=int, default=64)
    parser.add_argument("--no-publish", action="store_true")
    parser.add_argument("--compare-create-dataframe", action="store_true")
    parser.add_argument("--record", type=Path)
    args = parser.parse_args()

    seconds: dict[str, float] = {}
    cpu_seconds: dict[str, float] = {}

    @contextmanager
    def stage(name: str) -> Iterator[None]:
        started, cpu_started = time.perf_counter(), cpu_time()
        yield
        seconds[name] = round(time.perf_counter() - started, 2)
        cpu_seconds[name] = round(cpu_time() - cpu_started, 2)

    result: dict[str, Any] = {}
    workdir = Path(tempfile.mkdtemp(prefix="cdcgen-bench-"))
    with MemorySampler() as memory:
        nodes = make_nodes(args.nodes, args.shards, args.vnodes, seed=1)
        with stage("build"):
            arrays = build_generation_arrays(nodes, random.Random(2))
        previous = DescriptionColumns.from_arrays(build_generation_arrays(nodes, random.Random(3)))
        columns = DescriptionColumns.from_arrays(arrays)
        with stage("flatten"):
            table = flatten_generation(columns, T_CURRENT, "bench")
        result["streams"] = table.num_rows
        result["entries"] = columns.entry_count
        del table

        with stage("spark_start"):
            from cdcgen.extract.spark_extract import extract_generation
            from cdcgen.spark.session import spark_session

            spark = spark_session("cdcgen-bench")
        lake = workdir / "lake"
        write_generation(lake, previous, T_PREVIOUS, "bench-previous")  # untimed: the input
        with stage("extract"):
            extracted = extract_generation(spark, lake, columns, T_CURRENT, "bench", nodes=nodes)
        result["parquet_mb"] = round(
            sum(f.stat().st_size for f in extracted.artifact.directory.glob("*.parquet")) / 2**20,
            1,
        )
        result["description_json_mb"] = round(
            extracted.artifact.description_path.stat().st_size / 2**20, 1
        )
        if args.compare_create_dataframe:
            with stage("extract_via_createDataFrame"):
                frame = spark.createDataFrame(flatten_generation(columns, T_CURRENT, "bench"))
                frame.write.mode("overwrite").parquet(str(workdir / "via_create_dataframe"))

        with stage("validate"):
            from cdcgen.validation.generation_suite import validate_generation

            config = PipelineConfig(lake_path=lake, report_dir=workdir / "reports")
            validation = validate_generation(config, extracted.artifact.directory, spark=spark)
        result["validation_passed"] = validation.passed
        result["checks"] = len(validation.checks)
        result["report_index"] = str(validation.report_index)

        if not args.no_publish and cassandra_reachable():
            from cdcgen.adapters.cql import connect
            from cdcgen.adapters.publisher import CqlDescriptionPublisher

            with stage("publish_load_description"):
                # Hash-checked artifact, rows straight from the columns (no StreamId objects:
                # the suites validated them); ``to_description()`` would add ~1 s per 100k.
                rows = extracted.artifact.read_description().stream_rows()
            client = connect(["127.0.0.1"])
            keyspace = f"bench_{int(time.time())}"
            try:
                publisher = CqlDescriptionPublisher(client, keyspace=keyspace)
                with stage("publish"):
                    result["published_rows"] = publisher.publish_rows(T_CURRENT, rows)
                with stage("publish_again_idempotent"):
                    publisher.publish_rows(T_CURRENT, rows)
            finally:
                client.session.execute(f"DROP KEYSPACE IF EXISTS {keyspace}")
                client.close()
        else:
            result["publish"] = "skipped (no Cassandra on 127.0.0.1:9042 or --no-publish)"
        spark.stop()
    for bulky in ("lake", "via_create_dataframe"):  # keep only the (small) Data Docs
        shutil.rmtree(workdir / bulky, ignore_errors=True)

    result.update(
        {
            "benchmark": "generation_pipeline",
            "nodes": args.nodes,
            "vnodes": args.vnodes,
            "shards": args.shards,
            "seconds": seconds,
            "seconds_total": round(sum(seconds.values()), 2),
            "cpu_seconds": cpu_seconds,
            "peak_rss_python_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
            "peak_rss_jvm_mb_sampled": round(memory.peak_jvm / 2**20),
            "peak_rss_total_mb_sampled": round(memory.peak_total / 2**20),
            "cpus": os.cpu_count(),
            "load_average_1m": round(os.getloadavg()[0], 1),
            "python": platform.python_version(),
            "recorded_at": datetime.now(UTC).isoformat(timespec="seconds"),
        }
    )
    line = json.dumps(result, sort_keys=True)
    print(line)
    if args.record:
        with open(args.record, "a", encoding="utf-8") as handle:
            handle.write(line + "\n")


if __name__ == "__main__":
    main()
