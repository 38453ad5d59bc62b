"""The triggerer's cost of a backlog of deferred clock waits: threads, connections, CPU.

``--waiters`` (200) ``ClockPastTrigger.run()`` coroutines run in one event loop against
the sandbox's Cassandra, as the triggerer runs deferred sensors, each waiting for a
target past the measured window, so all of them poll throughout it. Two ways, each in
the same process one after the other:

* ``shared``: ``ClockPastTrigger.run()`` as it is (one client and one reading per poll
  interval for every wait on the cluster, :mod:`cdcgen.adapters.clock_sessions`);
* ``per_trigger``: each wait reads through a :class:`ClockSession` of its own, polled
  through ``asyncio.to_thread``, the shape the trigger had before the readings were
  shared (kept here to measure against).

Once every wait has deferred and connected (the connections steady for three seconds,
at most ``--warmup`` seconds; that start's own seconds and CPU are recorded apart), for
``--seconds``: this process's threads and TCP connections to the native port (sampled
every second: peak and mean), its CPU seconds and the Cassandra node's, both scaled to
a minute. The targets lie an hour ahead: no wait may end during the window (the run
fails if one does); then all are cancelled, as the triggerer cancels the triggers of
cleared tasks, and the connections left open are counted.

    .venv/bin/python benchmarks/bench_triggerer.py [--waiters 200] [--seconds 60] \\
        [--modes shared per_trigger] --output FILE

Run against an older checkout's package (``PYTHONPATH=<checkout>/plugins``) with
``--modes shared``, it measures that checkout's trigger as it was.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import psutil

NATIVE_PORT = 9042
CONTACT_POINTS = ["127.0.0.1"]
POLL_INTERVAL = 1.0  # the sensors' default


def established(port: int) -> int:
    """This process's established TCP connections to the node's CQL port."""
    return sum(
        1
        for c in psutil.Process().net_connections(kind="tcp")
        if c.raddr and c.raddr.port == port and c.status == psutil.CONN_ESTABLISHED
    )


def cassandra_process() -> psutil.Process | None:
    from cdcgen_dev.cassandra import Sandbox
    from cdcgen_dev.cassandra.cluster import node_pid

    pid = node_pid(Sandbox(1).node(1))
    return psutil.Process(pid) if pid is not None else None


def cpu(process: psutil.Process | None) -> float:
    if process is None:
        return 0.0
    times = process.cpu_times()
    return float(times.user + times.system)


async def per_trigger_wait(
    source: dict[str, Any], target_ms: int, timeout: float
) -> dict[str, Any]:
    """One wait with a client of its own, as ``ClockPastTrigger.run`` had it before."""
    from cdcgen.adapters.clock_sessions import ClockSession
    from cdcgen.airflow.triggers import config_from_clock_settings, wait_until_past

    session = ClockSession(config_from_clock_settings(source))
    try:
        return await wait_until_past(
            lambda: asyncio.to_thread(session.read_clocks),
            target_ms=target_ms,
            timeout=timedelta(seconds=timeout),
            poll_interval=POLL_INTERVAL,
            subject="bench",
        )
    finally:
        await asyncio.shield(asyncio.to_thread(session.close))


async def trigger_wait(source: dict[str, Any], target_ms: int, timeout: float) -> dict[str, Any]:
    from cdcgen.airflow.triggers import ClockPastTrigger

    trigger = ClockPastTrigger(
        target_ms=target_ms,
        source=source,
        timeout_seconds=timeout,
        subject="bench",
        poll_interval=POLL_INTERVAL,
    )
    payloads = [event.payload async for event in trigger.run()]
    assert len(payloads) == 1
    payload: dict[str, Any] = payloads[0]
    return payload


async def settle(port: int, least: float, most: float) -> float:
    """Wait until every wait has deferred and connected: the connections have not changed
    for three seconds (at least ``least`` seconds, at most ``most``); the seconds taken."""
    started = time.monotonic()
    counts: list[int] = []
    while time.monotonic() - started < most:
        counts.append(established(port))
        if time.monotonic() - started >= least and len(set(counts[-4:])) == 1 and len(counts) > 3:
            break
        await asyncio.sleep(1.0)
    return time.monotonic() - started


async def measure(
    mode: str, waiters: int, warmup: float, seconds: float, port: int = NATIVE_PORT
) -> dict[str, Any]:
    node = cassandra_process()
    source = {"contact_points": CONTACT_POINTS, "port": port, "clock_source": "cql"}
    # Never reached: every wait polls until it is cancelled after the window.
    target_ms = int((datetime.now(UTC) + timedelta(hours=1)).timestamp() * 1000)
    wait = trigger_wait if mode == "shared" else per_trigger_wait
    me = psutil.Process()
    idle = {"threads": me.num_threads(), "connections": established(port)}
    cpu_at_start = cpu(me)
    tasks = [asyncio.ensure_future(wait(source, target_ms, 7200.0)) for _ in range(waiters)]
    settled = await settle(port, min(5.0, warmup), warmup)
    deferral_cpu = cpu(me) - cpu_at_start
    window_start = time.monotonic()
    cpu_start, node_start = cpu(me), cpu(node)
    samples: list[tuple[int, int]] = []
    while time.monotonic() - window_start < seconds:
        samples.append((me.num_threads(), established(port)))
        await asyncio.sleep(1.0)
    window = time.monotonic() - window_start
    cpu_used, node_used = cpu(me) - cpu_start, cpu(node) - node_start
    ended = [task for task in tasks if task.done()]
    if ended:
        raise SystemExit(f"{mode}: {len(ended)} waits ended early: {ended[0].result()}")
    for task in tasks:  # as the triggerer cancels triggers whose tasks were cleared
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    await asyncio.sleep(1.0)
    per_minute = 60.0 / window
    return {
        "mode": mode,
        "waiters": waiters,
        "poll_interval": POLL_INTERVAL,
        "deferral_seconds": round(settled, 1),
        "deferral_cpu_seconds": round(deferral_cpu, 2),
        "window_seconds": round(window, 1),
        "idle": idle,
        "threads_peak": max(t for t, _ in samples),
        "threads_mean": round(sum(t for t, _ in samples) / len(samples), 1),
        "connections_peak": max(c for _, c in samples),
        "connections_mean": round(sum(c for _, c in samples) / len(samples), 1),
        "connections_after_cancel": established(port),
        "cpu_seconds_per_minute": round(cpu_used * per_minute, 2),
        "cassandra_cpu_seconds_per_minute": round(node_used * per_minute, 2)
        if node is not None
        else None,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--waiters", type=int, default=200)
    parser.add_argument("--warmup", type=float, default=90.0)
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--modes", nargs="+", choices=["shared", "per_trigger"],
                        default=["shared", "per_trigger"])  # fmt: skip
    parser.add_argument("--port", type=int, default=NATIVE_PORT, help="the node's CQL port")
    parser.add_argument("--output", type=Path)
    args = parser.parse_args()
    home = None
    if "AIRFLOW_HOME" not in os.environ:  # importing airflow writes a config there
        home = tempfile.mkdtemp(prefix="cdcgen-bench-airflow-")
        os.environ["AIRFLOW_HOME"] = home
    try:
        import cdcgen.airflow.triggers  # noqa: F401  (imported before the clock starts)

        results = {
            "load_at_start": round(os.getloadavg()[0], 2),
            "runs": [
                asyncio.run(measure(mode, args.waiters, args.warmup, args.seconds, args.port))
                for mode in args.modes
            ],
            "finished_at": datetime.now(UTC).isoformat(timespec="seconds"),
        }
    finally:
        if home is not None:
            shutil.rmtree(home, ignore_errors=True)
    text = json.dumps(results, indent=1, sort_keys=True)
    if args.output:
        args.output.write_text(text + "\n", encoding="utf-8")
    sys.stdout.write(text + "\n")


if __name__ == "__main__":
    main()
