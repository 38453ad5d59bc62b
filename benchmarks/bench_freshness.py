"""How soon a new generation is published: from its commit, and from its timestamp.

The whole deployment runs (:mod:`cdcgen_dev.devstack`: Airflow 3's api-server, scheduler,
dag-processor and triggerer on PostgreSQL, the default DAGs) against an emulated raft
cluster on the sandbox's Cassandra. One node joined an hour ago; its generation is
published by the runs that unpausing ``cdc_generations`` starts. Then ``--generations``
times, with no run going and no cron tick near: a node joins now, and
:func:`cdcgen_dev.devstack.freshness.measure` times the commit to the run the watcher's
event started, the commit to the timestamp row consumers read, and the generation's
timestamp (ahead of the commit by the ring delay) to that row.

    .venv/bin/python benchmarks/bench_freshness.py [--generations 3] --output FILE
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

DAG_ID = "cdc_generations"
PREFIX = "bench_fresh_"
# Off the dev stack's and the full-stack test's ports.
API_PORT = 28280
PG_PORT = 55632


def main() -> None:
    from cdcgen.adapters.cql import client_for
    from cdcgen.airflow.connections import source_connection_for
    from cdcgen.core.generation import SourceMode
    from cdcgen_dev.devstack.freshness import ASSET_TRIGGERED, measure, quiet
    from cdcgen_dev.devstack.stack import AirflowStack, StackSettings
    from cdcgen_dev.emulator import SandboxCluster
    from cdcgen_dev.emulator.schema_setup import drop_keyspaces
    from cdcgen_dev.paths import REPO_ROOT
    from cdcgen_dev.sandbox import sandbox_config

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--generations", type=int, default=3)
    parser.add_argument("--output", type=Path)
    args = parser.parse_args()

    base = REPO_ROOT / "var" / "bench-freshness"
    config = sandbox_config(
        PREFIX,
        contact_points=("127.0.0.1",),
        source_mode=SourceMode.RAFT,
        ring_delay=timedelta(seconds=1),
        lake_path=base / "lake",
        report_dir=base / "reports",
    )
    with client_for(config) as client:
        drop_keyspaces(client, config.source_schema)
        client.session.execute(f"DROP KEYSPACE IF EXISTS {config.target_keyspace}")
        cluster = SandboxCluster.from_config(client, config)
        cluster.join_node(
            SourceMode.RAFT, seed=1, vnodes=8, now=datetime.now(UTC) - timedelta(hours=1)
        )
    settings = StackSettings(
        base=base,
        api_port=API_PORT,
        pg_port=PG_PORT,
        parallelism=2,
        source=source_connection_for(config),
        extra_env={
            "CDCGEN_TARGET_KEYSPACE": config.target_keyspace,
            "CDCGEN_RING_DELAY_SECONDS": str(config.ring_delay.total_seconds()),
        },
    )
    stack = AirflowStack(settings)
    stack.down()
    shutil.rmtree(base, ignore_errors=True)
    shutil.rmtree(stack.postgres.base, ignore_errors=True)
    started = time.monotonic()
    figures: list[dict[str, Any]] = []
    try:
        stack.up()
        api = stack.api()
        api.wait_for_dag(DAG_ID, timeout=300)
        api.unpause(DAG_ID)
        time.sleep(20)  # the first generation's runs (the watcher's, the cron's) appear
        for i in range(args.generations):
            quiet(api, DAG_ID)
            measured = measure(api, config, DAG_ID, seed=100 + i, timeout=900)
            state = api.wait_for_runs(DAG_ID, [measured.run_id], timeout=900)[measured.run_id]
            figures.append({**measured.to_json(), "state": state})
            print(json.dumps(figures[-1]), flush=True)
    finally:
        stack.down()
    ok = all(f["run_type"] == ASSET_TRIGGERED and f["state"] == "success" for f in figures)

    def summary(name: str) -> dict[str, float]:
        values = [f[name] for f in figures]
        return {"median": round(statistics.median(values), 1), "max": round(max(values), 1)}

    result = {
        "generations": len(figures),
        "runs": figures,
        "commit_to_run": summary("commit_to_run"),
        "commit_to_published": summary("commit_to_published"),
        "timestamp_to_published": summary("timestamp_to_published"),
        "all_by_the_watcher": ok,
        "seconds": round(time.monotonic() - started, 1),
    }
    text = json.dumps(result, indent=1, sort_keys=True)
    if args.output:
        args.output.write_text(text + "\n", encoding="utf-8")
    print(text)
    sys.exit(0 if ok else 2)


if __name__ == "__main__":
    main()
