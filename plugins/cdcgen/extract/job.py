"""The extract job behind ``spark/extract_generation.py`` (kept here, testable, not in the shell).

Input: a description JSON file, or the source cluster's coordinates plus the generation's
timestamp and id (the job then reads the description itself: it can hold millions of
streams, too much for XCom). Output: the lake partition
``<lake>/generations/generation_ts=<ms>/`` (see :mod:`cdcgen.extract.lake`), read back by
Spark, and one JSON line on stdout describing it.
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import time
from collections.abc import Sequence
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from cdcgen.core.topology import nodes_from_json
from cdcgen.extract.description_columns import DescriptionColumns, read_description_file

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


class ExtractJobError(Exception):
    """The job's inputs are unusable (message says which); exit status 2."""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="extract_generation.py",
        description="Extract one CDC generation into the lake: one row per stream (Parquet), "
        "plus the description it came from.",
    )
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument("--description", metavar="FILE", help="description JSON to extract")
    where.add_argument(
        "--contact-points",
        metavar="HOSTS",
        help="read the description from this source cluster (comma-separated hosts)",
    )
    parser.add_argument("--port", type=int, default=9042)
    parser.add_argument("--source-mode", default=None, help="raft | gossip | v1 | tablets")
    parser.add_argument("--source-keyspace-prefix", default=None)
    when = parser.add_mutually_exclusive_group(required=True)
    when.add_argument("--generation-ts", metavar="ISO|MS", help="generation timestamp")
    when.add_argument("--generation-ts-ms", type=int, metavar="MS", help="timestamp in ms")
    parser.add_argument("--generation-id", required=True, help="the source's id of the generation")
    parser.add_argument("--lake", required=True, type=Path, help="lake root directory")
    parser.add_argument("--topology", metavar="FILE", help="the ring it was made for (optional)")
    parser.add_argument(
        "--table",
        metavar="KEYSPACE.TABLE",
        default=None,
        help="the base table of a tablets stream set (the generation id is its log table id)",
    )
    return parser


def parse_timestamp(args: argparse.Namespace) -> datetime:
    """``--generation-ts-ms``, or ``--generation-ts`` as milliseconds or ISO (naive = UTC)."""
    from cdcgen.core.timeline import generation_timestamp

    if args.generation_ts_ms is not None:
        return _EPOCH + timedelta(milliseconds=args.generation_ts_ms)
    text = str(args.generation_ts).strip()
    if text.lstrip("-").isdigit():
        return _EPOCH + timedelta(milliseconds=int(text))
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
        return generation_timestamp(moment if moment.tzinfo else moment.replace(tzinfo=UTC))
    except ValueError as exc:
        raise ExtractJobError(f"--generation-ts {text!r}: {exc}") from exc


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
    args: argparse.Namespace, timestamp: datetime
) -> tuple[DescriptionColumns, str | None]:
    """The description: from the file, or read from the source cluster.

    The second value is the source reader's objection, if it refused the stored rows
    (``None`` when it accepted them): the rows are extracted anyway, so the validation
    report shows what is wrong, and that objection fails the validation on its own.
    """
    if args.description:
        return read_description_file(args.description), None
    from cdcgen.adapters.cql import client_for
    from cdcgen.adapters.generation_sources import source_for
    from cdcgen.config import PipelineConfig
    from cdcgen.ports import GenerationRef, SourceMode

    config = PipelineConfig.from_env()
    changes: dict[str, Any] = {
        "contact_points": tuple(p.strip() for p in args.contact_points.split(",") if p.strip()),
        "port": args.port,
    }
    if args.source_mode:
        changes["source_mode"] = SourceMode(args.source_mode)
    if args.source_keyspace_prefix is not None:
        changes["source_keyspace_prefix"] = args.source_keyspace_prefix
    config = replace(config, **changes)
    from cdcgen.ports import CorruptGeneration

    with client_for(config) as client:
        try:
            generation = source_for(client, config).read_generation(
                GenerationRef(timestamp, args.generation_id)
            )
        except CorruptGeneration as exc:
            if not exc.stored_rows:
                raise
            print(f"extract_generation: the source reader refused it: {exc}", file=sys.stderr)
            return stored_columns(exc.stored_rows), str(exc)
    return DescriptionColumns.from_description(generation.description), None


def run(argv: Sequence[str] | None = None) -> dict[str, Any]:
    """Run the job; returns (and ``main`` prints) what was written and how long it took."""
    from cdcgen.extract.spark_extract import extract_generation, spark_session

    args = build_parser().parse_args(argv)
    started = time.monotonic()
    timestamp = parse_timestamp(args)
    columns, source_problem = load_columns(args, timestamp)
    nodes = None
    if args.topology:
        nodes = nodes_from_json(json.loads(Path(args.topology).read_text(encoding="utf-8")))
    loaded = time.monotonic()
    spark = spark_session("cdcgen-extract")
    result = extract_generation(
        spark,
        args.lake,
        columns,
        timestamp,
        args.generation_id,
        nodes=nodes,
        table=args.table,
        source_problem=source_problem,
    )
    done = time.monotonic()
    return {
        "partition": str(result.artifact.directory),
        **result.artifact.to_json(),
        "rows_read_back": result.rows_read_back,
        "seconds_load": round(loaded - started, 3),
        "seconds_extract": round(done - loaded, 3),
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
    }


def main(argv: Sequence[str] | None = None) -> int:
    from cdcgen.core.topology import InvalidDescription, InvalidTopology
    from cdcgen.ports import MetadataError

    try:
        summary = run(argv)
    except (ExtractJobError, InvalidDescription, InvalidTopology, MetadataError, OSError) as exc:
        print(f"extract_generation: error: {exc}", file=sys.stderr)
        return 2
    print(json.dumps(summary, sort_keys=True))
    return 0
