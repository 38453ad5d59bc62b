"""Benchmark: one generation from the sandbox's raft tables to published, against its floor.

The sandbox writes a raft-mode generation (``system.topology`` node rows and
``cdc_generations_v3`` rows, committed) for ``--nodes`` x ``--shards`` x ``--vnodes``
(default the seed's 100 x 64 x 256 = 1,638,400 streams); that set-up is not timed. Then
the code the ``cdc_generations`` DAG tasks run, stage by stage, in this process:

* ``detect``: the committed generations against the published ones, the live ring
  recorded with the newest (:func:`cdcgen.pipeline.detect.detect`);
* ``extract``: the extract job (:func:`cdcgen.jobs.extract_generation.run`): read the
  description from the source, write the lake partition, read it back with Spark;
* ``spark_start``: within ``extract``, getting the Spark session the job and then
  validation use. With ``$CDCGEN_SPARK_REMOTE`` (what ``make bench`` sets) that is a
  session on a long-lived Spark Connect server, as a deployment runs one: the job
  connects after the read, and no stage starts a JVM. Without it, the job starts a
  local session while it reads (not added to the total), and validation shares it;
* ``validate``: the GX suites with the recorded ring (:func:`cdcgen.pipeline.validate.validate`),
  Data Docs and the report page;
* ``publish``: :func:`cdcgen.pipeline.publish.publish_in_order` and the report page,
  with the description parsed again (the DAG's publish task is a process of its own).

Before the stages, this process imports what the deployment's executor imports before it
forks the tasks' processes (:mod:`cdcgen.airflow.preload`: GX, the Connect client, the
task modules), and freezes them out of the garbage collector's sweeps as the executor
does before it forks its workers (which the tasks inherit); ``preload_seconds`` says
how long that took, not part of the total.

``floor_seconds`` is measured in the same run (:mod:`generation_floor`): the same rows
read and written by cassandra-driver alone at its best concurrency, after the stages.
The set-up's garbage is collected before the stages: writing the generation's 25,600
rows leaves as many of the driver's request futures behind as cyclic garbage, which no
task process has, and whichever stage ran the next full collection paid for it (the
docs/benchmarks.md has the figures). Peak RSS is this process and its children
(a local Spark JVM), plus the Spark Connect server and its children when
``--spark-server-pid`` names it, sampled every 0.1 s; CPU seconds likewise.

    .venv/bin/python benchmarks/bench_generation_pipeline.py [--nodes 100 --shards 64
        --vnodes 256] [--spark-server-pid PID] [--output FILE]

Prints one JSON object (and writes it to ``--output``).
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import random
import shutil
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from generation_floor import measure_floor
from resources import MemorySampler, cpu_time

from cdcgen.adapters.cql import connect
from cdcgen.core.cdc_log import timeuuid_from_micros
from cdcgen.core.generation_arrays import GenerationArrays, build_generation_arrays
from cdcgen.core.time import to_micros
from cdcgen.core.tokens import MAX_TOKEN, MIN_TOKEN
from cdcgen.core.topology import Node
from cdcgen.schema import SourceSchema
from cdcgen_dev.emulator import SandboxCluster, SimNode
from cdcgen_dev.emulator.metadata_writers import (
    write_raft_generation,
    write_topology_nodes,
)
from cdcgen_dev.emulator.raw import RawRange
from cdcgen_dev.emulator.schema_setup import drop_keyspaces
from cdcgen_dev.sandbox import sandbox_config

os.environ.setdefault("GX_ANALYTICS_ENABLED", "false")
PREFIX = "bench_gen_"
#: The DAG run the stages run as: validate and publish record the same run, as in the DAG.
DAG_ID, RUN_ID = "cdc_generations", "bench"


def ring_nodes(count: int, shards: int, vnodes: int, rng: random.Random) -> list[SimNode]:
    tokens: set[int] = set()
    while len(tokens) < count * vnodes:
        tokens.add(rng.randint(MIN_TOKEN, MAX_TOKEN))
    ordered = list(tokens)
    return [
        SimNode(
            name=f"node{i + 1}",
            host_id=uuid.UUID(int=rng.getrandbits(128), version=4),
            address="127.0.0.1",
            tokens=tuple(sorted(ordered[i * vnodes : (i + 1) * vnodes])),
            shard_count=shards,
            ignore_msb=12,
            joined_at=datetime.now(UTC) - timedelta(hours=1),
        )
        for i in range(count)
    ]


def make_nodes(count: int, shards: int, vnodes: int, seed: int) -> list[Node]:
    """The same ring as core nodes (for benchmarks that need no sandbox)."""
    return [n.as_core_node() for n in ring_nodes(count, shards, vnodes, random.Random(seed))]


def raw_rows(arrays: GenerationArrays) -> list[RawRange]:
    data = arrays.stream_bytes.tobytes()
    offsets = arrays.offsets.tolist()
    return [
        RawRange(
            int(end),
            tuple(data[r * 16 : (r + 1) * 16] for r in range(offsets[i], offsets[i + 1])),
            int(arrays.ignore_msb[i]),
        )
        for i, end in enumerate(arrays.range_ends.tolist())
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=100)
    parser.add_argument("--shards", type=int, default=64)
    parser.add_argument("--vnodes", type=int, default=256)
    parser.add_argument("--output", type=Path)
    parser.add_argument(
        "--spark-server-pid", type=int, help="the Spark Connect server's, counted in memory/CPU"
    )
    args = parser.parse_args()
    server = (args.spark_server_pid,) if args.spark_server_pid else ()
    spark = "connect" if os.environ.get("CDCGEN_SPARK_REMOTE") else "local"
    if spark == "connect" and not server:
        raise SystemExit("--spark-server-pid: the Connect server's memory must be counted")

    # A deployment's tasks fork from a scheduler that imported these before any
    # connection or thread exists (cdcgen.airflow.executor).
    from cdcgen.airflow.preload import preload

    preloaded = preload()
    gc.freeze()  # as LocalExecutor forks its workers: the tasks inherit these objects frozen

    workdir = Path(tempfile.mkdtemp(prefix="cdcgen-bench-gen-"))
    config = sandbox_config(PREFIX, lake_path=workdir / "lake", report_dir=workdir / "reports")
    schema = SourceSchema(PREFIX)
    client = connect(tuple(config.contact_points))
    cluster = SandboxCluster(client, schema)
    drop_keyspaces(client, schema)
    cluster.setup()
    nodes = ring_nodes(args.nodes, args.shards, args.vnodes, random.Random(1))
    arrays = build_generation_arrays([n.as_core_node() for n in nodes], random.Random(2))
    write_topology_nodes(client, schema, nodes)
    data_id = timeuuid_from_micros(to_micros(datetime.now(UTC)), random.Random(3))
    at = datetime.now(UTC).replace(microsecond=0) - timedelta(minutes=10)
    write_raft_generation(client, schema, data_id, at, raw_rows(arrays))
    gc.collect()  # the set-up's, not a task's (see the module doc)

    seconds: dict[str, float] = {}
    cpu: dict[str, float] = {}

    @contextmanager
    def stage(name: str) -> Iterator[None]:
        started, cpu_started = time.perf_counter(), cpu_time(server)
        yield
        seconds[name] = round(time.perf_counter() - started, 3)
        cpu[name] = round(cpu_time(server) - cpu_started, 2)

    result: dict[str, Any] = {}
    with MemorySampler(also=server) as memory:
        with stage("detect"):
            from cdcgen.adapters.generation_sources import connected_generation_ports
            from cdcgen.generation_lake.ring_records import LakeRingRecords
            from cdcgen.pipeline.detect import detect

            with connected_generation_ports(config) as ports:
                (selection,) = detect(
                    ports.source,
                    ports.publisher,
                    ring=ports.ring,
                    rings=LakeRingRecords(config.lake_path),
                )
        generation = selection.generation
        with stage("extract"):
            from cdcgen.jobs.extract_generation import arguments, run

            extracted = run(arguments(generation), config)
        seconds["spark_start"] = extracted["seconds_spark_start"]
        with stage("validate"):
            from cdcgen.pipeline.validate import validate

            outcome = validate(config, generation, dag_id=DAG_ID, run_id=RUN_ID)
        from cdcgen.generation_lake import documents

        # The DAG's publish task is a process of its own: it parses the description again.
        documents._parsed.clear()
        with stage("publish"):
            from cdcgen.generation_lake.lake_tables import LocalGenerationLake
            from cdcgen.pipeline.publish import publish_in_order
            from cdcgen.pipeline.reporting import record_generation

            with connected_generation_ports(config) as ports:
                published = publish_in_order(
                    [generation],
                    [outcome],
                    source=ports.source,
                    publisher=ports.publisher,
                    lake=LocalGenerationLake(config.lake_path),
                    target_keyspace=config.target_keyspace,
                )
            record_generation(
                config,
                generation,
                outcome,
                published=True,
                dag_id=DAG_ID,
                run_id=RUN_ID,
            )
        from cdcgen.spark_runtime.session import JobKind, job_session

        job_session(JobKind.GENERATION_EXTRACT).stop()  # the session the extract job used
    (publication,) = published.published
    if publication.streams != arrays.stream_count or not outcome.passed:
        raise SystemExit(f"wrong result: {publication}, passed={outcome.passed}")
    floor = measure_floor(
        client, schema, data_id, arrays.range_ends, f"{PREFIX}floor", generation.timestamp
    )
    if floor.streams != arrays.stream_count:
        raise SystemExit(f"floor read {floor.streams} streams, expected {arrays.stream_count}")
    # spark_start is within extract (its own part of it, or beside the read).
    total = round(sum(v for k, v in seconds.items() if k != "spark_start"), 2)
    result.update(
        {
            "streams": arrays.stream_count,
            "entries": arrays.entry_count,
            "nodes": args.nodes,
            "shards": args.shards,
            "vnodes": args.vnodes,
            "seconds": total,
            "floor_seconds": floor.seconds,
            "ratio_to_floor": round(total / floor.seconds, 2),
            **floor.to_json(),
            "stages": seconds,
            "cpu_seconds": cpu,
            "peak_rss_mb": round(memory.peak_total / 2**20),
            "peak_rss_jvm_mb": round(memory.peak_children / 2**20),
            "spark": spark,
            "preload_seconds": round(preloaded, 2),
            "checks": len(outcome.expectations),
            "rows_read_back": extracted["rows_read_back"],
            "extract_parts": {
                part: extracted[f"seconds_{part}"]
                for part in ("load", "spark_start", "spark_wait", "extract")
            },
        }
    )
    drop_keyspaces(client, schema)
    client.session.execute(f"DROP KEYSPACE IF EXISTS {PREFIX}floor", timeout=120)
    client.close()
    shutil.rmtree(workdir, ignore_errors=True)
    text = json.dumps(result, sort_keys=True)
    print(text)
    if args.output:
        args.output.parent.mkdir(parents=True, exist_ok=True)
        args.output.write_text(text + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
