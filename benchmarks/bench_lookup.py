"""Benchmark: build a large generation and map random tokens to streams on one core.

Default size: 100 nodes x 64 shards x 256 vnodes, i.e. 25,600 entries and 1,638,400
streams, then 5,000,000 random tokens through ``StreamLookup.stream_indices``. Prints one
JSON line (``tokens_per_second``, ``build_seconds``, ``peak_rss_mb``, ...).

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/bench_lookup.py [--verify] [--scalar-build]

``--verify`` also builds the object description and checks 10,000 tokens against
``TopologyDescription.get_stream``; ``--scalar-build`` times the pure-Python
``make_generation`` too and checks it gives the same generation.
"""

from __future__ import annotations

import os

# One core: keep numpy's BLAS/OpenMP pools (unused here, but still) to one thread.
for _variable in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_variable, "1")

import argparse  # noqa: E402
import json  # noqa: E402
import platform  # noqa: E402
import random  # noqa: E402
import resource  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

from cdcgen.core.generation_arrays import build_generation_arrays  # noqa: E402
from cdcgen.core.lookup import StreamLookup  # noqa: E402
from cdcgen.core.tokens import MAX_TOKEN, MIN_TOKEN  # noqa: E402
from cdcgen.core.topology import Node, make_generation  # noqa: E402


def make_nodes(count: int, shards: int, vnodes: int, ignore_msb: int, seed: int) -> list[Node]:
    rng = random.Random(seed)
    ring: set[int] = set()
    while len(ring) < count * vnodes:
        ring.add(rng.randint(MIN_TOKEN, MAX_TOKEN))
    tokens = list(ring)
    rng.shuffle(tokens)
    return [
        Node(f"node{i}", shards, ignore_msb, tuple(tokens[i * vnodes : (i + 1) * vnodes]))
        for i in range(count)
    ]


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--nodes", type=int, default=100)
    parser.add_argument("--shards", type=int, default=64)
    parser.add_argument("--vnodes", type=int, default=256)
    parser.add_argument("--ignore-msb", type=int, default=12)
    parser.add_argument("--tokens", type=int, default=5_000_000)
    parser.add_argument("--repeat", type=int, default=3, help="lookup runs; the best counts")
    parser.add_argument("--seed", type=int, default=2026)
    parser.add_argument("--verify", action="store_true")
    parser.add_argument("--scalar-build", action="store_true")
    args = parser.parse_args()

    nodes = make_nodes(args.nodes, args.shards, args.vnodes, args.ignore_msb, args.seed)

    started = time.perf_counter()
    arrays = build_generation_arrays(nodes, random.Random(args.seed))
    build_seconds = time.perf_counter() - started

    started = time.perf_counter()
    lookup = StreamLookup.from_arrays(arrays)
    index_seconds = time.perf_counter() - started

    tokens = np.random.default_rng(args.seed).integers(
        MIN_TOKEN, MAX_TOKEN, size=args.tokens, dtype=np.int64, endpoint=True
    )
    lookup.stream_indices(tokens[:1000])  # warm-up
    timings = []
    for _ in range(args.repeat):
        started = time.perf_counter()
        rows = lookup.stream_indices(tokens)
        timings.append(time.perf_counter() - started)
    best = min(timings)

    result: dict[str, object] = {
        "benchmark": "stream_lookup",
        "nodes": args.nodes,
        "shards": args.shards,
        "vnodes": args.vnodes,
        "ignore_msb": args.ignore_msb,
        "entries": arrays.entry_count,
        "streams": arrays.stream_count,
        "tokens": args.tokens,
        "build_seconds": round(build_seconds, 3),
        "index_seconds": round(index_seconds, 4),
        "lookup_seconds": round(best, 4),
        "tokens_per_second": round(args.tokens / best),
        "peak_rss_mb": round(peak_rss_mb(), 1),
        "checksum": int(rows.sum()),
        "numpy": np.__version__,
        "python": platform.python_version(),
        "threads": os.environ["OMP_NUM_THREADS"],
    }

    if args.verify:
        started = time.perf_counter()
        description = arrays.to_description()
        result["description_seconds"] = round(time.perf_counter() - started, 3)
        sample = tokens[:10_000]
        expected = [description.get_stream(int(t)) for t in sample]
        result["verified_tokens"] = len(sample)
        result["verified"] = lookup.streams(sample) == expected
        if args.scalar_build:
            started = time.perf_counter()
            scalar = make_generation(nodes, random.Random(args.seed))
            result["scalar_build_seconds"] = round(time.perf_counter() - started, 3)
            result["scalar_build_identical"] = scalar == description
        result["peak_rss_mb_with_objects"] = round(peak_rss_mb(), 1)

    print(json.dumps(result))


if __name__ == "__main__":
    main()
