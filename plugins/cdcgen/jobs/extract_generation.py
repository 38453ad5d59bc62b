"""The extract job behind ``spark/extract_generation.py`` (kept here, testable, not in the shell).

Configuration comes as every job's does: the typed :class:`~cdcgen.config.PipelineConfig`
from ``CDCGEN_*`` variables (the task that submits the job hands over its own with
:meth:`~cdcgen.env_settings.EnvSettings.to_env`). The arguments say only which generation: its
timestamp, id and (tablets) table. The job then reads the description from the source
itself (it can hold millions of streams, too much for XCom), or from ``--description``.
Output: one commit of the generations table (partition ``generation_ts=<ms>``, see
:mod:`cdcgen.generation_lake.lake_tables`), read back by Spark at that version, and one JSON line on
stdout describing it (its version, files and digests).
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, TypeVar

from cdcgen.adapters.lake_store import LakeLocation
from cdcgen.config import PipelineConfig
from cdcgen.core.errors import (
    CdcgenError,
    CorruptGeneration,
    ExitCode,
    InvalidTimestamp,
)
from cdcgen.core.generation import Generation
from cdcgen.core.ring import Ring, ring_from_json, with_left_nodes
from cdcgen.core.time import from_millis, parse_moment
from cdcgen.generation_lake.description_columns import DescriptionColumns
from cdcgen.generation_lake.description_json import read_description_file
from cdcgen.generation_lake.lake_tables import ArtifactJson
from cdcgen.jobs.errors import ExtractJobError
from cdcgen.spark_runtime.session import JobKind

T = TypeVar("T")


class ExtractSummary(ArtifactJson):
    """The job's line on stdout: the extraction, its partition's folder, the rows Spark
    read back, and where the time went."""

    partition: str
    rows_read_back: int
    seconds_load: float
    seconds_spark_start: float
    seconds_spark_wait: float
    seconds_extract: float
    peak_rss_mb: float


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="extract_generation.py",
        description="Extract one CDC generation into the lake: one row per stream (Parquet), "
        "plus the description it came from. The source cluster and the lake come from the "
        "CDCGEN_* environment.",
    )
    parser.add_argument(
        "--description", metavar="FILE", help="extract this description JSON, not the source's"
    )
    when = parser.add_mutually_exclusive_group(required=True)
    when.add_argument("--generation-ts", metavar="ISO|MS", help="generation timestamp")
    when.add_argument("--generation-ts-ms", type=int, metavar="MS", help="timestamp in ms")
    parser.add_argument("--generation-id", required=True, help="the source's id of the generation")
    parser.add_argument(
        "--table",
        metavar="KEYSPACE.TABLE",
        default="",
        help="the base table of a tablets stream set (the generation id is its log table id)",
    )
    parser.add_argument(
        "--lake",
        type=LakeLocation.of,
        help="lake root, a folder or s3://bucket/prefix (default: CDCGEN_LAKE_PATH)",
    )
    parser.add_argument(
        "--topology",
        metavar="FILE",
        help="the ring it was made for (default: the ring detection recorded with it, if any)",
    )
    return parser


def arguments(generation: Generation) -> list[str]:
    """The command line that names ``generation`` to this job (what the DAG passes)."""
    args = ["--generation-ts-ms", str(generation.ms), "--generation-id", generation.id]
    return [*args, "--table", generation.table] if generation.table else args


def generation_of(args: argparse.Namespace) -> Generation:
    """The generation the arguments name (``--generation-ts``: ms or ISO, naive = UTC)."""
    if args.generation_ts_ms is not None:
        moment = from_millis(args.generation_ts_ms)
    else:
        try:
            moment = parse_moment(str(args.generation_ts), "--generation-ts")
        except InvalidTimestamp as exc:
            raise ExtractJobError(str(exc)) from exc
    try:
        return Generation(moment, args.generation_id, args.table or "")
    except InvalidTimestamp as exc:
        raise ExtractJobError(f"--generation-ts: {exc}") from exc


def stored_columns(rows: Sequence[tuple[Any, Any, Any]]) -> DescriptionColumns:
    """A description the reader refused, as close to what is stored as columns allow.

    Rows sorted by range end (unusable rows left out); each range's streams in shard
    order where their tokens say it (a set does not keep the order), the rest after.
    The validation then shows, stream by stream, what is wrong with it.
    """
    from cdcgen.core.tokens import shard_of

    entries: list[tuple[int, int, list[bytes]]] = []
    for range_end, blobs, ignore_msb in rows:
        if range_end is None:
            continue
        ignore = int(ignore_msb) if ignore_msb is not None else 0
        streams = [bytes(b) for b in blobs or () if isinstance(b, bytes | bytearray)]
        shards = max(len(streams), 1)

        def shard_key(blob: bytes, ignore: int = ignore, shards: int = shards) -> tuple[int, int]:
            if len(blob) != 16 or not 0 <= ignore <= 63:
                return (shards, 0)
            token = int.from_bytes(blob[:8], "big", signed=True)
            return (shard_of(token, shards, ignore), token)

        entries.append((int(range_end), ignore, sorted(streams, key=shard_key)))
    entries.sort(key=lambda entry: entry[0])
    return DescriptionColumns.from_blobs(entries)


def load_columns(
    config: PipelineConfig, generation: Generation, description: str | None
) -> tuple[DescriptionColumns, str | None]:
    """The description: from the file, or read from the source cluster.

    The second value is the source reader's objection, if it refused the stored rows
    (``None`` when it accepted them): the rows are extracted anyway, so the validation
    report shows what is wrong, and that objection fails the validation on its own.
    """
    if description:
        return read_description_file(description), None
    from cdcgen.adapters.cql import client_for
    from cdcgen.adapters.generation_sources import source_for

    with client_for(config) as client:
        try:
            found = source_for(client, config).read_arrays(generation)
        except CorruptGeneration as exc:
            if not exc.stored_rows:
                raise
            print(f"extract_generation: the source reader refused it: {exc}", file=sys.stderr)
            return stored_columns(exc.stored_rows), str(exc)
    return DescriptionColumns.from_arrays(found), None


def run(argv: Sequence[str] | None = None, config: PipelineConfig | None = None) -> ExtractSummary:
    """Run the job; returns (and ``main`` prints) what was written and how long it took.

    ``config`` defaults to the ``CDCGEN_*`` environment.
    """
    from cdcgen.generation_lake.ring_records import LakeRingRecords
    from cdcgen.generation_lake.spark_extract import extract_generation
    from cdcgen.spark_runtime.session import job_session, remote_for

    args = build_parser().parse_args(argv)
    config = config or PipelineConfig.from_env()
    started = time.monotonic()
    generation = generation_of(args)
    lake = args.lake or config.lake_path

    def load() -> tuple[DescriptionColumns, str | None, Ring | None]:
        columns, source_problem = load_columns(config, generation, args.description)
        ring: Ring | None
        if args.topology:  # given: the recorded ring is not read
            ring = ring_from_json(json.loads(Path(args.topology).read_text(encoding="utf-8")))
        elif generation.table:
            ring = None
        else:  # read live, maybe after nodes left: the range ends say what it lacks
            recorded = LakeRingRecords(lake).recorded(generation)
            ring = with_left_nodes(recorded, columns.range_ends.tolist()) if recorded else None
        return columns, source_problem, ring

    kind = JobKind.GENERATION_EXTRACT
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="cdcgen-spark-start") as pool:
        # A local session's JVM starts while the description is read: its start-up and
        # the driver's Python reading rows each take seconds, on different cores. A
        # Connect session is a client: connecting after the read costs a fraction of a
        # second, where importing it beside the read slowed the read (one GIL).
        starting = None if remote_for(kind) else pool.submit(_timed, job_session, kind)
        columns, source_problem, ring = load()
        loaded = time.monotonic()
        spark, spark_start = starting.result() if starting else _timed(job_session, kind)
    waited = time.monotonic()
    result = extract_generation(
        spark,
        lake,
        columns,
        generation.timestamp,
        generation.id,
        nodes=ring,
        table=generation.table or None,
        source_problem=source_problem,
    )
    done = time.monotonic()
    return ExtractSummary(
        partition=str(result.artifact.directory),
        **result.artifact.to_json(),
        rows_read_back=result.rows_read_back,
        seconds_load=round(loaded - started, 3),
        seconds_spark_start=round(spark_start, 3),
        seconds_spark_wait=round(waited - loaded, 3),
        seconds_extract=round(done - waited, 3),
        peak_rss_mb=round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
    )


def _timed(start: Callable[[JobKind], T], kind: JobKind) -> tuple[T, float]:
    began = time.monotonic()
    return start(kind), time.monotonic() - began


def main(argv: Sequence[str] | None = None) -> int:
    """Exit status (:class:`~cdcgen.core.errors.ExitCode`): 0 extracted, 3 terminal (the
    inputs, the settings or the generation's metadata are unusable), 4 transient (a file
    or the cluster could not be read, a generation still being written)."""
    from cdcgen.adapters.errors import exit_code

    try:
        summary = run(argv)
    except (CdcgenError, OSError) as exc:
        print(f"extract_generation: error: {exc}", file=sys.stderr)
        return exit_code(exc)
    print(json.dumps(summary, sort_keys=True))
    return ExitCode.OK


# spark-submit runs this file (cdcgen.airflow.spark_jobs resolves it from the package).
if __name__ == "__main__":
    sys.exit(main())
