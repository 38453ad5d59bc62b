"""Benchmark: where the GX validation of one large generation spends its time.

    .venv/bin/python benchmarks/bench_validation.py [--nodes 20] [--top 30]
        [--engine auto|sql|spark]

Builds a generation (nodes x 64 shards x 256 vnodes) and the one before it, extracts
it into a temporary lake, then runs :func:`validate_generation` under cProfile and
prints the wall time and the costliest calls (the Spark flag pass shows up as one py4j
wait under ``toArrow``; GX's checks run on SQLite).
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import random
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from bench_generation_pipeline import make_nodes

from cdcgen.config import PipelineConfig
from cdcgen.core.generation_arrays import build_generation_arrays
from cdcgen.generation_lake.description_columns import DescriptionColumns
from cdcgen.generation_lake.generation_writes import write_generation
from cdcgen.generation_lake.spark_extract import extract_generation
from cdcgen.spark_runtime.session import spark_session
from cdcgen.validation.generation_suite import validate_generation

T_PREVIOUS = datetime(2026, 11, 22, tzinfo=UTC)
T_CURRENT = T_PREVIOUS + timedelta(minutes=1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=20)
    parser.add_argument("--top", type=int, default=30)
    parser.add_argument("--engine", default=None, help="flag engine (default: the setting)")
    args = parser.parse_args()
    nodes = make_nodes(args.nodes, 64, 256, seed=1)
    previous = DescriptionColumns.from_arrays(build_generation_arrays(nodes, random.Random(3)))
    current = DescriptionColumns.from_arrays(build_generation_arrays(nodes, random.Random(2)))
    work = Path(tempfile.mkdtemp(prefix="cdcgen-bench-validation-"))
    spark = spark_session("cdcgen-bench-validation")
    write_generation(work / "lake", previous, T_PREVIOUS, "previous")
    artifact = extract_generation(
        spark, work / "lake", current, T_CURRENT, "current", nodes=nodes
    ).artifact
    config = PipelineConfig(lake_path=work / "lake", report_dir=work / "reports")
    started = time.perf_counter()
    profile = cProfile.Profile()
    profile.enable()
    result = validate_generation(config, artifact, spark=spark, engine=args.engine)
    profile.disable()
    print(
        f"{artifact.stream_count:,} streams: validation {time.perf_counter() - started:.1f} s, "
        f"{len(result.checks)} checks, passed={result.passed}"
    )
    pstats.Stats(profile).sort_stats("cumulative").print_stats(args.top)
    spark.stop()


if __name__ == "__main__":
    main()
