"""Change extraction speed against a raw scan of the same CDC log table.

Both sides run the same Spark job shape on the same data and write the same Parquet
rows (same Arrow conversion, same base-token hashing), so the ratio isolates what the
design costs: window planning, the reads (one query per stream, or token-range scans
placed into windows, as the run's rule picks), checkpoints, partition overwrite and the
watermark, against the generic way of dumping a table (token-range scans,
``token(pk) > ? AND token(pk) <= ?``, at the better of ``--splits`` concurrencies),
which ignores generations, windows and checkpoints. Target: extraction >= 0.7x the raw
scan's rows/s.

    .venv/bin/python benchmarks/bench_changes.py --rows 1000000 --shards 64 --vnodes 64 \
        [--backlog] [--keep-data] --output FILE

One invocation measures one stream count (``--shards`` x ``--vnodes`` streams per
generation). It loads ``--rows`` log rows (one row per write, pk/ck/v) into a sandbox CDC
table under the ``bench_changes_`` prefix, across two raft generations (each row in the
stream the generation active at its time maps its key to); ``--keep-data`` reuses rows
loaded with the same shape and keeps them. Without ``--backlog`` the old generation is
already checkpointed (a steady run reads the new one); with it, a cold start reads every
window of both. Each side runs ``--repeat`` times after a warm-up, alternating which goes
first; the JSON written to ``--output`` holds the medians, both sides' times, the
read-only query patterns and the strategy the run chose (``CDCGEN_CHANGES_READ`` forces one).
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

from cdcgen.adapters.change_log import CqlChangeLogReader
from cdcgen.adapters.checkpoints import CqlCheckpointStore
from cdcgen.adapters.cql import CqlClient, connect
from cdcgen.adapters.log_tables import describe_log_table
from cdcgen.adapters.read_sessions import SessionKey, shared_session
from cdcgen.changes.changes_run import ChangesRequest, extract_changes
from cdcgen.changes.columns import LakeBatchBuilder, Placement, column_specs, lake_schema
from cdcgen.changes.job import read_options, table_adapters
from cdcgen.changes.layout import lake_buckets, table_root
from cdcgen.changes.result import ExtractionRun
from cdcgen.changes.settings import ChangesSettings
from cdcgen.config import PipelineConfig
from cdcgen.core.cdc_log import TableRef, timeuuid_from_micros
from cdcgen.core.change_batch import PARTITION_COLUMNS
from cdcgen.core.clocks import NodeClock
from cdcgen.core.generation import SourceMode
from cdcgen.core.log_table import LogTable
from cdcgen.core.lookup import StreamLookup
from cdcgen.core.watermark import BucketCheckpoint
from cdcgen.core.windows import Interval, generation_spans
from cdcgen.schema import SourceSchema
from cdcgen.spark_runtime.fanout import arrow_struct
from cdcgen.spark_runtime.session import JobKind, job_session
from cdcgen_dev.emulator import SandboxCluster, create_cdc_table, orders_table
from cdcgen_dev.emulator.partition import int_key_token
from cdcgen_dev.emulator.schema_setup import drop_keyspaces
from cdcgen_dev.paths import REPO_ROOT
from cdcgen_dev.sandbox import sandbox_config

PREFIX = "bench_changes_"
KEYSPACE = f"{PREFIX}ks"
#: Which data set ``--keep-data`` finds loaded (shards x vnodes x rows).
MARKER = f"{KEYSPACE}.bench_loaded"
RESULTS = REPO_ROOT / "benchmarks" / "results" / "bench_changes.json"


def load_rows(
    client: CqlClient, cluster: SandboxCluster, rows: int, start: datetime, seconds: float
) -> None:
    """Insert ``rows`` single-row writes spread over ``seconds`` from ``start``, each in the
    stream that the generation active at its time maps its key to (the data crosses the
    generation switch)."""
    from cassandra.concurrent import execute_concurrent_with_args

    records = cluster.generations()
    lookups = [StreamLookup(r.description()) for r in records]
    switches = np.array([int(r.timestamp.timestamp() * 1_000_000) for r in records[1:]])
    keys = np.arange(rows, dtype=np.int64) % max(1, rows // 4)
    tokens = np.array([int_key_token(int(k)) for k in keys], dtype=np.int64)
    base = int(start.timestamp() * 1_000_000)
    step = max(1, int(seconds * 1_000_000 / rows))
    micros = base + np.arange(rows, dtype=np.int64) * step
    active = np.searchsorted(switches, micros, side="right")
    streams = np.empty((rows, 16), dtype=np.uint8)
    for index, lookup in enumerate(lookups):
        mask = active == index
        streams[mask] = lookup.arrays.stream_bytes[lookup.stream_indices(tokens[mask])]
    rng = random.Random(1)
    statement = client.session.prepare(
        f"INSERT INTO {KEYSPACE}.orders_scylla_cdc_log "
        '("cdc$stream_id", "cdc$time", "cdc$batch_seq_no", "cdc$operation", '
        '"cdc$end_of_batch", pk, ck, v) VALUES (?, ?, 0, 2, true, ?, ?, ?)'
    )
    params = (
        (bytes(streams[i]), timeuuid_from_micros(int(micros[i]), rng), int(keys[i]), i, f"v{i}")
        for i in range(rows)
    )
    batch: list[Any] = []
    for item in params:
        batch.append(item)
        if len(batch) == 20_000:
            execute_concurrent_with_args(client.session, statement, batch, concurrency=128)
            batch = []
    if batch:
        execute_concurrent_with_args(client.session, statement, batch, concurrency=128)


# --- the raw scan: token ranges, the way a generic connector dumps a table ----------------


def _scan_task(
    key: SessionKey, log_table: LogTable, schema: Any, ranges: Any, rows_read: Any,
    batches: Iterator[Any],
) -> Iterator[Any]:  # fmt: skip
    session = shared_session(key)
    statement = session.prepare(
        f"SELECT {log_table.select_list} FROM {log_table.table.qualified_log} "
        'WHERE token("cdc$stream_id") > ? AND token("cdc$stream_id") <= ?'
    )
    statement.fetch_size = 5000
    builder = LakeBatchBuilder(
        column_specs(statement.result_metadata),
        log_table.partition_key,
        int(session.cluster.protocol_version),
        schema,
    )
    placement = Placement("raw", "raw", 0)
    count = 0
    for batch in batches:
        for index in batch.column("id").to_pylist():
            low, high = ranges.value[index]
            result = session.execute(statement, (low, high), timeout=60)
            while True:
                rows = list(result.current_rows)
                if rows:
                    count += len(rows)
                    yield builder.to_batch([(rows, placement)])
                if not result.has_more_pages:
                    break
                result.fetch_next_page()
    rows_read.add(count)


def raw_scan(
    spark: Any, config: PipelineConfig, log_table: LogTable, schema: Any, out: Path, splits: int
) -> int:
    """Token ranges, one Spark task each, written like the extraction (same Spark tricks:
    ``spark.range`` tasks, a broadcast work list, an accumulator for the row count)."""
    key = SessionKey(tuple(config.contact_points), config.port, log_table.partitioner, 60.0)
    edges = np.linspace(-(2**63), 2**63 - 1, splits + 1, dtype=np.float64).astype(object)
    bounds = [int(e) for e in edges]
    bounds[0], bounds[-1] = -(2**63), 2**63 - 1
    ranges = spark.sparkContext.broadcast([(bounds[i], bounds[i + 1]) for i in range(splits)])
    rows_read = spark.sparkContext.accumulator(0)
    frame = spark.range(0, splits, 1, splits)
    rows = frame.mapInArrow(
        partial(_scan_task, key, log_table, schema, ranges, rows_read), arrow_struct(schema)
    )
    rows.write.mode("overwrite").partitionBy(*PARTITION_COLUMNS).parquet(str(out))
    ranges.unpersist()
    return int(rows_read.value)


def read_only(
    config: PipelineConfig, log_table: LogTable, streams: Sequence[bytes], interval: Interval
) -> tuple[float, float, int, int]:
    """The query patterns alone, in this process: one paged full scan against one query
    per stream (routed, paged). Returns (scan seconds, streams seconds, rows, rows)."""
    session = shared_session(
        SessionKey(tuple(config.contact_points), config.port, log_table.partitioner, 60.0)
    )
    scan = session.prepare(f"SELECT {log_table.select_list} FROM {log_table.table.qualified_log}")
    scan.fetch_size = 5000
    t = time.monotonic()
    scanned = sum(1 for _ in session.execute(scan, timeout=60))
    scan_seconds = time.monotonic() - t
    reader = CqlChangeLogReader(session, log_table, read_options(ChangesSettings()))
    t = time.monotonic()
    read = sum(
        len(page)
        for stream in streams
        for page in reader.pages(stream, interval.start, interval.end)
    )
    return scan_seconds, time.monotonic() - t, scanned, read


# --- main -----------------------------------------------------------------------------------


class BenchClock:
    """One clock past every window: the loaded rows are all in the past."""

    def __init__(self, at: datetime) -> None:
        self.at = at

    def read_clocks(self) -> list[NodeClock]:
        return [NodeClock("bench", self.at)]


def _loaded_shape(client: CqlClient) -> str | None:
    try:
        row = client.session.execute(f"SELECT shape FROM {MARKER} WHERE id = 0").one()
    except Exception:  # no data loaded yet
        return None
    return None if row is None else str(row.shape)


def load(client: CqlClient, cluster: SandboxCluster, schema: SourceSchema, args: Any) -> None:
    """A fresh emulated cluster with two raft generations and ``--rows`` log rows.

    The first node (``--shards`` x ``--vnodes``) starts the first generation 15 minutes
    ago; a second node (same shards, one vnode) starts the second one 5 minutes later:
    about as many streams each. The rows fill the 10 minutes after the first switch."""
    drop_keyspaces(client, schema)
    client.session.execute(f"DROP KEYSPACE IF EXISTS {KEYSPACE}", timeout=120)
    cluster.setup()
    began_at = datetime.now(UTC) - timedelta(minutes=15)
    cluster.join_node(SourceMode.RAFT, shards=args.shards, vnodes=args.vnodes, seed=3, now=began_at)
    cluster.join_node(
        SourceMode.RAFT, shards=args.shards, vnodes=1, seed=4, now=began_at + timedelta(minutes=5)
    )
    create_cdc_table(cluster, orders_table(KEYSPACE, cdc_ttl=0))
    load_rows(client, cluster, args.rows, began_at + timedelta(seconds=1), seconds=600)
    client.session.execute(f"CREATE TABLE {MARKER} (id int PRIMARY KEY, shape text)")
    client.session.execute(f"INSERT INTO {MARKER} (id, shape) VALUES (0, %s)", (_shape(args),))


def _shape(args: Any) -> str:
    return f"{args.shards}x{args.vnodes}x{args.rows}"


def _median(values: Sequence[float]) -> float:
    return round(statistics.median(values), 3)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--contact-points", default="127.0.0.1")
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--shards", type=int, default=8)
    parser.add_argument("--vnodes", type=int, default=16)
    parser.add_argument(
        "--splits",
        default="4,16",
        help="token ranges of the raw scan (one Spark task each); with several, the "
        "warm-up round tries each and the best is timed",
    )
    parser.add_argument(
        "--backlog",
        action="store_true",
        help="cold start: no checkpoints, every window of both generations is read; "
        "otherwise the old generation is already checkpointed and the run reads the new one",
    )
    parser.add_argument("--output", type=Path, default=RESULTS)
    parser.add_argument("--keep-data", action="store_true", help="reuse (and keep) loaded rows")
    parser.add_argument("--no-read-only", action="store_true", help="skip the read-only figures")
    args = parser.parse_args(argv)

    contact_points = tuple(args.contact_points.split(","))
    config = sandbox_config(
        PREFIX,
        contact_points=contact_points,
        source_mode=SourceMode.RAFT,
        confidence_window=timedelta(0),
        generation_leeway=timedelta(0),
    )
    client = connect(contact_points)
    schema = SourceSchema(PREFIX)
    cluster = SandboxCluster(client, schema, ring_delay=timedelta(0), leeway=timedelta(0))
    began = time.monotonic()
    for keyspace in list(client.cluster.metadata.keyspaces):  # state of interrupted runs
        if keyspace.startswith(f"{PREFIX}state"):
            client.session.execute(f"DROP KEYSPACE IF EXISTS {keyspace}", timeout=120)
    reused = args.keep_data and _loaded_shape(client) == _shape(args)
    if not reused:
        load(client, cluster, schema, args)
    load_seconds = time.monotonic() - began
    records = cluster.generations()
    generations = generation_spans([(r.timestamp, r.description(), r.id) for r in records])
    if len(generations) != 2:
        raise SystemExit(f"expected two generations, found {len(generations)}")
    old, new = generations
    table = TableRef(KEYSPACE, "orders")
    settings = ChangesSettings.from_env()  # CDCGEN_CHANGES_READ=... forces a strategy
    log_table = describe_log_table(client, table, schema, settings.log_partitioner)
    interval = Interval(old.start, datetime.now(UTC) - timedelta(seconds=1))
    clocks = BenchClock(datetime.now(UTC))
    spark = job_session(JobKind.CHANGES_EXTRACT, "cdcgen-bench-changes")
    spark.range(4).repartition(2).count()  # warm up: Python workers

    expected = args.rows if args.backlog else _rows_since(client, new.start)
    splits_tried = [int(v) for v in str(args.splits).split(",")]
    splits = splits_tried[0]
    times: dict[str, list[float]] = {"raw": [], "changes": []}
    phases: list[dict[str, float]] = []
    result: ExtractionRun | None = None
    lake_of: list[Any] = []
    strategy = ""
    run_tag = uuid.uuid4().hex[:8]
    state_keyspaces: list[str] = []
    raw_schema = lake_schema(
        column_specs(client.session.prepare(log_table.window_query()).result_metadata)
    )
    with tempfile.TemporaryDirectory(prefix="bench-changes-") as tmp:
        for i in range(args.repeat + 1):  # the first pair is a warm-up, not recorded
            lake = Path(tmp) / f"lake{i}"
            target = f"{PREFIX}state_{run_tag}_{i}"  # fresh state: nothing checkpointed yet
            state_keyspaces.append(target)
            run_config = config.with_overrides(lake_path=lake, target_keyspace=target)
            store = CqlCheckpointStore(client, target)
            store.ensure_schema()
            if not args.backlog:  # steady state: the old generation is done
                store.record_start(table, old.start, "bench")
                assert old.end is not None
                buckets = lake_buckets(
                    table_root(lake, table), settings.buckets, log_table.partitioner
                )
                done = old.buckets(buckets)
                store.save(table, (BucketCheckpoint(old.start, b, old.end) for b in done))

            def raw_side(n: int, cfg: PipelineConfig = run_config, out: Path = lake) -> float:
                t = time.monotonic()
                seen = raw_scan(spark, cfg, log_table, raw_schema, out / f"raw{n}", n)
                if seen != args.rows:
                    raise SystemExit(f"raw scan read {seen} rows, not {args.rows}")
                return time.monotonic() - t

            def changes_side(cfg: PipelineConfig = run_config) -> tuple[float, ExtractionRun]:
                t = time.monotonic()
                built = table_adapters(client, spark, cfg, settings, table)
                lake_of[:] = [built.lake]
                ports = replace(built.ports(validate=False), clocks=clocks)
                request = ChangesRequest(table, interval)
                done = extract_changes(request, ports, cfg, settings, cdc_ttl=built.log_table.ttl)
                return time.monotonic() - t, done

            if i == 0 and len(splits_tried) > 1:  # pick the raw scan's best concurrency
                tried = {n: raw_side(n) for n in splits_tried}
                splits = min(tried, key=lambda n: tried[n])
                print(f"raw scan by splits: {tried}; timing {splits}", flush=True)
            if i % 2:  # alternate which side runs first: load drifts on a shared machine
                changes, result = changes_side()
                raw = raw_side(splits)
            else:
                raw = raw_side(splits)
                changes, result = changes_side()
            if result.rows_written != expected:
                raise SystemExit(f"round {i}: extracted {result.rows_written}, not {expected}")
            print(
                f"round {i}: raw scan {raw:.2f}s, changes {changes:.2f}s "
                f"({result.streams_read} stream reads, {len(result.windows)} windows, "
                f"{result.jobs} job(s), {result.phases})",
                flush=True,
            )
            strategy = "ranges" if lake_of[0].range_index(result.windows) else "streams"
            if i:
                times["raw"].append(raw)
                times["changes"].append(changes)
                phases.append(dict(result.phases))
    read_only_figures: dict[str, Any] = {}
    if not args.no_read_only:
        all_streams = [s.raw for g in generations for s in g.streams]
        scan_s, streams_s, scanned, read = read_only(run_config, log_table, all_streams, interval)
        read_only_figures = {
            "read_only_scan_seconds": round(scan_s, 3),
            "read_only_streams_seconds": round(streams_s, 3),
            "read_only_rows": {"scan": scanned, "streams": read},
            "read_only_ratio": round(scan_s / streams_s, 3),
        }
    for keyspace in state_keyspaces:
        client.session.execute(f"DROP KEYSPACE IF EXISTS {keyspace}", timeout=120)
    if not args.keep_data:
        drop_keyspaces(client, schema)
        client.session.execute(f"DROP KEYSPACE IF EXISTS {KEYSPACE}", timeout=120)
    client.close()
    assert result is not None

    raw_rate = args.rows / statistics.median(times["raw"])
    change_rate = expected / statistics.median(times["changes"])
    figures = {
        "when": datetime.now(UTC).isoformat(timespec="seconds"),
        "streams": args.shards * args.vnodes,
        "streams_per_generation": [len(g.streams) for g in generations],
        "generations": len(generations),
        "backlog": args.backlog,
        "rows": expected,
        "rows_loaded": args.rows,
        "windows": len(result.windows),
        "stream_reads": result.streams_read,
        "jobs": result.jobs,
        "read_strategy": strategy,
        "repeat": args.repeat,
        "raw_scan_splits": splits,
        "raw_scan_seconds": times["raw"],
        "changes_seconds": times["changes"],
        "raw_scan_median_seconds": _median(times["raw"]),
        "changes_median_seconds": _median(times["changes"]),
        "changes_phases": phases,
        "raw_scan_rows_per_s": round(raw_rate),
        "rows_per_s": round(change_rate),
        "ratio": round(change_rate / raw_rate, 3),
        "target_ratio": 0.7,
        **read_only_figures,
        "load_seconds": round(load_seconds, 1),
        "data_reused": reused,
        "spark": "local[2]",
    }
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(figures, indent=1) + "\n")
    print(json.dumps(figures, indent=1))
    return 0 if figures["ratio"] >= 0.7 else 2


def _rows_since(client: CqlClient, start: datetime) -> int:
    """Log rows written from ``start`` on (what a run past the old generation reads)."""
    statement = client.session.prepare(
        f"SELECT COUNT(*) FROM {KEYSPACE}.orders_scylla_cdc_log "
        'WHERE "cdc$time" >= minTimeuuid(?) ALLOW FILTERING'
    )
    return int(client.session.execute(statement, (start,), timeout=300).one()[0])


if __name__ == "__main__":
    sys.exit(main())
