"""``make bench``: every benchmark of the project, one JSON file, one table.

Starts the local Cassandra if it is not running (and stops it afterwards if it started
it), then runs, each in its own process so that peak memory and start-up costs are its
own:

* ``generation_1_6M`` and ``generation_scaling``: :mod:`bench_generation_pipeline` at
  1/16, 1/4 and the full size of the seed's cluster (100 nodes x 64 shards x 16, 64 and
  256 vnodes), detect to published against the driver-only floor. Their Spark work runs
  on one Spark Connect server started for them (:mod:`cdcgen_dev.spark_connect`), as a
  deployment keeps one running: its start is not timed, the sizes run smallest first,
  so the full size meets a server that has served two generations; its memory and CPU
  are counted with each size's;
* ``changes``: :mod:`bench_changes` at 128, 4,096 and 73,728 streams (the last a cold
  start over a backlog), 1M log rows each, against a raw token-range scan;
* ``replication``: :mod:`bench_replication_copy` (a bootstrap's Spark copy against a
  raw driver copy of the same rows, same run) and :mod:`bench_replication_apply` (the
  apply's rows/s and peak memory over 1M- and 4M-change backlogs, beside the raw write
  floor), the apply's rate set against the changes extraction's;
* ``cli_validate_small``: ``cdcgen generation validate`` on a 256-range description,
  process start to exit;
* ``lookup``: :mod:`bench_lookup`, tokens mapped to streams per second on one core;
* ``triggerer``: :mod:`bench_triggerer`, 200 deferred clock waits in one event loop:
  threads, connections and CPU per minute, shared readings against a client per wait;
* ``freshness``: :mod:`bench_freshness`, the whole Airflow stack running: a node joins
  and the generations DAG's watcher starts the run that publishes its generation; the
  delays from the commit and from the generation's timestamp to its publication;
* ``follow``: :mod:`bench_follow`, continuous mode: the changes job following a table
  on a Spark standalone cluster and a follow of its sink, over a steady ten-minute
  workload: p50/p95/max from a write to the lake and to the sink (it leases the
  sandbox itself).

Writes ``benchmarks/results/latest.json`` and prints the table of docs/benchmarks.md. Figures are
ratios measured side by side on a shared machine: ``machine.load_before`` says how quiet
it was.

    .venv/bin/python benchmarks/run_all.py [--quick]

``--quick`` runs small sizes only (a smoke test of the tooling, not a measurement).
``--only replication`` (or ``triggerer``, ``freshness``, ``follow``) runs that part alone
and keeps the other parts' figures from the results file (each part says when it was
measured).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from cdcgen_dev.spark_connect import ConnectServer

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results" / "latest.json"
PYTHON = sys.executable

GENERATION_SIZES = (16, 64, 256)  # vnodes of 100 nodes x 64 shards
#: shards, vnodes, cold start over a backlog, extra arguments. The largest count runs one
#: timed round and skips the per-stream read-only comparison (73,728 queries a round).
CHANGES: tuple[tuple[int, int, bool, tuple[str, ...]], ...] = (
    (8, 16, False, ()),
    (64, 64, False, ()),
    (72, 1024, True, ("--repeat", "1", "--no-read-only")),
)
CHANGE_ROWS = 1_000_000
#: Backlogs the apply is measured over (its peak memory must not grow with them), and
#: the rows of the bootstrap copy's table.
APPLY_BACKLOGS = (1_000_000, 4_000_000)
COPY_ROWS = 500_000


def _run_json(
    args: list[str], output: Path, timeout: float, env: dict[str, str] | None = None
) -> dict[str, Any]:
    """Run one benchmark process; its figures are the JSON it wrote to ``output``."""
    started = time.monotonic()
    done = subprocess.run(
        [PYTHON, *args, "--output", str(output)],
        cwd=HERE.parent,
        env=env,
        timeout=timeout,
        check=False,
        capture_output=True,
        text=True,
    )
    if done.returncode not in (0, 2) or not output.exists():  # 2: ran, missed its target
        sys.stderr.write(done.stdout[-4000:] + done.stderr[-4000:])
        raise SystemExit(f"{args[0]} failed with exit status {done.returncode}")
    figures: dict[str, Any] = json.loads(output.read_text(encoding="utf-8"))
    print(f"  {' '.join(args)}: {time.monotonic() - started:.0f} s", flush=True)
    return figures


def generation(vnodes: int, work: Path, server: ConnectServer) -> dict[str, Any]:
    return _run_json(
        [
            "benchmarks/bench_generation_pipeline.py",
            *("--vnodes", str(vnodes), "--spark-server-pid", str(server.pid)),
        ],
        work / f"generation_{vnodes}.json",
        timeout=1800,
        env={**os.environ, **server.client_env()},
    )


def changes(
    shards: int, vnodes: int, backlog: bool, extra: tuple[str, ...], rows: int, work: Path
) -> dict[str, Any]:
    args = ["benchmarks/bench_changes.py", "--rows", str(rows)]
    args += ["--shards", str(shards), "--vnodes", str(vnodes), *extra]
    return _run_json(
        args + (["--backlog"] if backlog else []),
        work / f"changes_{shards}x{vnodes}.json",
        timeout=3600,
    )


def replication(backlogs: tuple[int, ...], copy_rows: int, work: Path) -> dict[str, Any]:
    copy = _run_json(
        ["benchmarks/bench_replication_copy.py", "--rows", str(copy_rows), "--repeat", "2"],
        work / "replication_copy.json",
        timeout=3600,
    )
    apply = _run_json(
        ["benchmarks/bench_replication_apply.py", "--rows", *(str(n) for n in backlogs)],
        work / "replication_apply.json",
        timeout=7200,
    )
    return {"copy": copy, "apply": apply}


def triggerer(quick: bool, work: Path) -> dict[str, Any]:
    sizes = ("--waiters", "20", "--warmup", "10", "--seconds", "5") if quick else ()
    return _run_json(
        ["benchmarks/bench_triggerer.py", *sizes], work / "triggerer.json", timeout=1800
    )


def freshness(quick: bool, work: Path) -> dict[str, Any]:
    count = ("--generations", "1") if quick else ()
    return _run_json(
        ["benchmarks/bench_freshness.py", *count], work / "freshness.json", timeout=3600
    )


def follow(quick: bool, work: Path) -> dict[str, Any]:
    """Continuous mode's freshness; ``--quick``: a two-minute workload (not a figure)."""
    minutes = ("--minutes", "2", "--setup-seconds", "150") if quick else ()
    return _run_json(["benchmarks/bench_follow.py", *minutes], work / "follow.json", timeout=3600)


def cli_validate_small(work: Path) -> dict[str, Any]:
    """A 256-range description (4 nodes x 64 vnodes x 8 shards), validated by the CLI."""
    import random

    from cdcgen.core.tokens import MAX_TOKEN, MIN_TOKEN

    rng = random.Random(5)
    tokens = sorted({rng.randint(MIN_TOKEN, MAX_TOKEN) for _ in range(256)})
    topology = {
        "nodes": [
            {"name": f"n{i}", "shard_count": 8, "ignore_msb": 12, "tokens": tokens[i::4]}
            for i in range(4)
        ]
    }
    topology_file = work / "topology.json"
    topology_file.write_text(json.dumps(topology), encoding="utf-8")
    cdcgen = str(Path(PYTHON).with_name("cdcgen"))
    built = subprocess.run(
        [cdcgen, "generation", "build", "--topology", str(topology_file), "--seed", "1"],
        capture_output=True,
        text=True,
        check=True,
    )
    description = work / "description.json"
    description.write_text(built.stdout, encoding="utf-8")
    ranges = len(json.loads(built.stdout)["entries"])
    started = time.monotonic()
    done = subprocess.run(
        [cdcgen, "generation", "validate", str(description), "--topology", str(topology_file),
         "--report", str(work / "validate-report")],
        capture_output=True,
        text=True,
        check=False,
    )  # fmt: skip
    seconds = time.monotonic() - started
    if done.returncode != 0:
        raise SystemExit(f"cdcgen generation validate failed: {done.stdout}{done.stderr}")
    return {"ranges": ranges, "seconds": round(seconds, 2)}


def lookup() -> dict[str, Any]:
    done = subprocess.run(
        [PYTHON, "benchmarks/bench_lookup.py"],
        cwd=HERE.parent,
        env={**os.environ, "OMP_NUM_THREADS": "1"},
        capture_output=True,
        text=True,
        check=True,
    )
    figures: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return figures


def table(results: dict[str, Any]) -> str:
    """The table of docs/benchmarks.md: each figure, its ratio, against its target."""
    lines = ["| figure | measured | ratio | target |", "|---|---|---|---|"]
    big = results["generation_1_6M"]
    stages = ", ".join(
        f"{k} {v:.1f}" + (" within extract" if k == "spark_start" else "")
        for k, v in big["stages"].items()
    )
    lines.append(
        f"| 1,638,400-stream generation, detect to published "
        f"(Spark: {big.get('spark', 'local')}) | {big['seconds']:.1f} s "
        f"({stages}) | {big['seconds'] / big['floor_seconds']:.1f}x the driver floor "
        f"({big['floor_seconds']:.1f} s) | <= 30 s, <= 2x |"
    )
    lines.append(
        f"| its peak memory (process + Spark JVM) | {big['peak_rss_mb']} MB | | <= 4,096 MB |"
    )
    for point in results["generation_scaling"]:
        lines.append(
            f"| generation, {point['streams']:,} streams | {point['seconds']:.1f} s | "
            f"{point['seconds'] / point['floor_seconds']:.1f}x floor | linear |"
        )
    for point in results["changes"]:
        what = "cold start over a backlog" if point.get("backlog") else "incremental"
        lines.append(
            f"| changes, {point['streams']:,} streams, {point['rows']:,} rows, "
            f"{point['windows']} windows ({what}) | {point['rows_per_s']:,.0f} rows/s | "
            f"{point['rows_per_s'] / point['raw_scan_rows_per_s']:.2f}x raw scan "
            f"({point['raw_scan_rows_per_s']:,.0f} rows/s) | >= 0.7x |"
        )
    if "replication" in results:
        copy = results["replication"]["copy"]
        lines.append(
            f"| replication bootstrap copy (Spark, {copy['rows']:,} rows) | "
            f"{copy['spark_rows_per_s']:,.0f} rows/s | {copy['ratio']:.2f}x a raw driver copy "
            f"({copy['raw_rows_per_s']:,.0f} rows/s) | >= 0.7x |"
        )
        apply = results["replication"]["apply"]
        extraction = results["changes"][0]["rows_per_s"]
        floor = apply["raw_write_floor"].get("rows_per_s")  # none: every concurrency timed out
        ceiling = apply.get("sink_ceiling", {}).get("rows_per_s")

        def against_ceiling(rate: float) -> str:
            """The rate against the best any client of the sandbox's node reached."""
            return (
                f"{rate / ceiling:.2f}x the sink's ceiling ({ceiling:,.0f} rows/s), "
                if ceiling
                else ""
            )

        for run in apply["apply"]:
            lines.append(
                f"| replication apply, {run['rows']:,}-change backlog | "
                f"{run['rows_per_s']:,.0f} rows/s, peak {run['peak_rss_mb']} MB | "
                f"{run['rows_per_s'] / extraction:.2f}x the extraction ({extraction:,.0f} rows/s), "
                + against_ceiling(run["rows_per_s"])
                + (
                    f"{run['rows_per_s'] / floor:.2f}x the raw write floor ({floor:,.0f} rows/s)"
                    if floor
                    else "the raw write floor timed out at every concurrency"
                )
                + " | "
                ">= 1x the extraction; the same peak at every backlog |"
            )
        for run in apply.get("apply_on_spark", []):
            lines.append(
                f"| replication apply on {run['spark_tasks']} local Spark tasks, "
                f"{run['rows']:,}-change backlog | {run['rows_per_s']:,.0f} rows/s | "
                f"{run['rows_per_s'] / extraction:.2f}x the extraction"
                + (f", {run['rows_per_s'] / ceiling:.2f}x the sink's ceiling" if ceiling else "")
                + " | >= 1x the extraction |"
            )
    small = results["cli_validate_small"]
    lines.append(
        f"| `cdcgen generation validate`, {small['ranges']} ranges | {small['seconds']:.1f} s "
        "| | <= 5 s |"
    )
    if "lookup" in results:
        rate = results["lookup"].get("tokens_per_second", 0)
        lines.append(f"| token-to-stream lookup, one core | {rate:,.0f} tokens/s | | >= 1M/s |")
    if "triggerer" in results:
        runs = {run["mode"]: run for run in results["triggerer"]["runs"]}
        for mode, what in (("shared", "shared readings"), ("per_trigger", "a client per wait")):
            if mode in runs:
                run = runs[mode]
                lines.append(
                    f"| {run['waiters']} deferred clock waits in one triggerer loop, {what} | "
                    f"{run['threads_peak']} threads, {run['connections_peak']} connections, "
                    f"{run['cpu_seconds_per_minute']:.1f} CPU s/min "
                    f"(Cassandra {run['cassandra_cpu_seconds_per_minute']:.1f}) | | "
                    "constant in the number of waits |"
                )
    if "freshness" in results:
        fresh = results["freshness"]
        for name, what in (
            ("commit_to_run", "its commit to the run the watcher started"),
            ("commit_to_published", "its commit to its publication"),
            ("timestamp_to_published", "its timestamp to its publication"),
        ):
            lines.append(
                f"| new generation ({fresh['generations']}, full Airflow stack), {what} | "
                f"median {fresh[name]['median']:.1f} s, max {fresh[name]['max']:.1f} s | | "
                "seconds, not the 10-minute tick |"
            )
    if "follow" in results:
        run = results["follow"]
        what = (
            f"{run['log_rows']:,} rows over {run['workload_minutes']:.1f} min, a cycle every "
            f"{run['every_seconds']:.0f} s, leeway {run['leeway_seconds']:.0f} s + confidence "
            f"window {run['confidence_window_seconds']:.0f} s"
        )
        lake, sink = run["write_to_lake"], run["write_to_sink"]
        behind = f"p50 {sink['p50'] - lake['p50']:+.1f} s, p95 {sink['p95'] - lake['p95']:+.1f} s"
        for where, fig, ratio, target in (
            ("the lake", lake, "", "<= 90 s (confidence window + about a minute)"),
            ("the sink", sink, f" {behind} after the lake", "<= 150 s (a minute after the lake)"),
        ):
            lines.append(
                f"| continuous mode, a write to {where} ({what}) | p50 {fig['p50']:.1f} s, "
                f"p95 {fig['p95']:.1f} s, max {fig['max']:.1f} s |{ratio} | {target} |"
            )
    machine = results["machine"]
    for name, label in (
        ("replication", "Replication"),
        ("triggerer", "Triggerer"),
        ("freshness", "Freshness"),
        ("follow", "Continuous mode"),
    ):
        part = results.get(name, {})
        if "recorded_at" in part:
            lines.append(
                f"\n{label} rows: `make bench` part `--only {name}` "
                f"({part['recorded_at']}, load {part['load_before']} before it)."
            )
    lines.append(
        f"\nMachine: {machine['cores']} cores, load {machine['load_before']} before the run, "
        f"Python {machine['python']}; command: `make bench` ({results['recorded_at']})."
    )
    return "\n".join(lines)


def only(part: str, output: Path, quick: bool) -> None:
    """Run ``part`` alone; the results file keeps every other part's figures."""
    from cdcgen_dev.cassandra import Sandbox

    cdcgen = str(Path(PYTHON).with_name("cdcgen"))
    results: dict[str, Any] = json.loads(output.read_text(encoding="utf-8"))
    started_here = not Sandbox(1).is_running()
    load_before = round(os.getloadavg()[0], 2)
    if part != "follow":  # it leases the sandbox itself, beside other users
        subprocess.run([cdcgen, "sandbox", "up"], check=True)
    try:
        with tempfile.TemporaryDirectory(prefix="cdcgen-bench-") as tmp:
            if part == "follow":
                results[part] = follow(quick, Path(tmp))
            elif part == "triggerer":
                results[part] = triggerer(quick, Path(tmp))
            elif part == "freshness":
                results[part] = freshness(quick, Path(tmp))
            else:
                backlogs = (20_000, 80_000) if quick else APPLY_BACKLOGS
                copy_rows = 20_000 if quick else COPY_ROWS
                results[part] = replication(backlogs, copy_rows, Path(tmp))
    finally:
        if started_here and part != "follow":
            subprocess.run([cdcgen, "sandbox", "down"], check=False)
    when = datetime.now(UTC).isoformat(timespec="seconds")
    results[part]["recorded_at"] = when
    results[part]["load_before"] = load_before
    output.write_text(json.dumps(results, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    print(table(results))
    print(f"\n{part} measured {when} (load {load_before} before); written: {output}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes: a tooling smoke test")
    parser.add_argument("--output", type=Path, default=RESULTS)
    parser.add_argument(
        "--only",
        choices=["replication", "triggerer", "freshness", "follow"],
        help="run this part alone",
    )
    args = parser.parse_args()
    if args.only:
        only(args.only, args.output, args.quick)
        return

    from cdcgen_dev.cassandra import Sandbox
    from cdcgen_dev.spark_connect import connect_server

    cdcgen = str(Path(PYTHON).with_name("cdcgen"))
    started_here = not Sandbox(1).is_running()
    load_before = round(os.getloadavg()[0], 2)
    subprocess.run([cdcgen, "sandbox", "up"], check=True)  # fetches Cassandra if needed
    results: dict[str, Any] = {
        "machine": {
            "cores": os.cpu_count(),
            "load_before": load_before,
            "python": platform.python_version(),
        },
    }
    sizes = (1, 2, 4) if args.quick else GENERATION_SIZES
    configs = ((2, 8, False, ()), (4, 16, True, ())) if args.quick else CHANGES
    rows = 20_000 if args.quick else CHANGE_ROWS
    try:
        with tempfile.TemporaryDirectory(prefix="cdcgen-bench-") as tmp:
            work = Path(tmp)
            print("generation pipeline:", flush=True)
            with connect_server(work / "spark-connect") as server:
                scaling = [generation(v, work, server) for v in sizes]
            results["generation_scaling"] = [
                {k: p[k] for k in ("streams", "seconds", "floor_seconds", "stages")}
                for p in scaling
            ]
            results["generation_1_6M"] = scaling[-1]
            print("changes:", flush=True)
            results["changes"] = [changes(s, v, b, x, rows, work) for s, v, b, x in configs]
            print("replication:", flush=True)
            backlogs = (20_000, 80_000) if args.quick else APPLY_BACKLOGS
            copy_rows = 20_000 if args.quick else COPY_ROWS
            results["replication"] = replication(backlogs, copy_rows, work)
            print("cli validate:", flush=True)
            results["cli_validate_small"] = cli_validate_small(work)
            results["lookup"] = lookup()
            print("triggerer:", flush=True)
            results["triggerer"] = triggerer(args.quick, work)
            print("freshness:", flush=True)
            results["freshness"] = freshness(args.quick, work)
            print("continuous mode:", flush=True)
            results["follow"] = follow(args.quick, work)
    finally:
        if started_here:
            subprocess.run([cdcgen, "sandbox", "down"], check=False)
    results["recorded_at"] = datetime.now(UTC).isoformat(timespec="seconds")
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(results, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    print(table(results))
    print(f"\nwritten: {args.output}")


if __name__ == "__main__":
    main()
