"""``make demo``: the whole pipeline once, on the embedded sandbox, then proof it worked.

1. start the local Cassandra (``cdcgen sandbox up``; reused if running);
2. prepare the Airflow home ``var/airflow``;
3. emulate a raft-mode ScyllaDB cluster under the ``demo_`` keyspace prefix
   (reset first): nodes join one after another, each join commits a generation,
   while a workload writes to the CDC table ``demo_shop.orders`` across them;
4. run ``airflow dags test cdc_generations``: detect, wait for the node clocks
   (deferred to a trigger), extract with Spark, validate with Great Expectations,
   publish to ``demo_system_distributed``;
5. read the published tables back and compare them with the source;
6. run ``airflow dags test cdc_changes``: wait until the window is closed on every
   node, extract every change stream by stream into the lake, check the rows (GX),
   then count the lake against the source's log table.

It prints what happens and, as its **last line**, one JSON object with
``generations_published``, ``streams_published``, ``validation``, ``report`` (an
``index.html``), ``changes_rows`` and ``colocation``.  When a part of the pipeline
is missing or a step fails, it says which and exits non-zero instead of printing
numbers it did not measure.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from cdcgen.config import REPO_ROOT, PipelineConfig
from cdcgen.core.generation import SourceMode

PREFIX = "demo_"
NODES = 3
SHOP = f"{PREFIX}shop"
TABLE = f"{SHOP}.orders"
#: The demo's confidence window: short, so the demo does not sit idle for the default 30 s.
CONFIDENCE_SECONDS = 3
RING_DELAY = timedelta(seconds=1)
DEMO_DIR = REPO_ROOT / "var" / "demo"


class DemoFailed(Exception):
    """A step did not do its job; the message says which and where to look."""


def say(message: str) -> None:
    print(message, flush=True)


def demo_config() -> PipelineConfig:
    """The embedded default (127.0.0.1:9042, sandbox clocks) under the demo's own prefix.

    The lake is the demo's own (emptied each time: validation compares a generation
    with the previous one in the same lake); reports go to the usual report directory,
    where the Airflow UI's report pages find them.
    """
    base = PipelineConfig.from_env()
    return base.with_overrides(
        source_mode=SourceMode.RAFT,
        source_keyspace_prefix=PREFIX,
        clock_source="sandbox",
        target_keyspace=f"{PREFIX}system_distributed",
        ring_delay=RING_DELAY,
        lake_path=DEMO_DIR / "lake",
    )


def start_cassandra() -> None:
    from cdcgen_dev.cassandra import Sandbox

    result = Sandbox(1).up()
    what = "started" if result.started else "already running"
    say(f"      Cassandra {what} at {', '.join(result.contact_points)} ({result.seconds} s)")


def prepare_home() -> Path:
    from cdcgen_dev.airflow_home import ensure_home

    home = ensure_home()
    say(f"      {home}")
    return home


def emulate_cluster(config: PipelineConfig) -> tuple[list[dict[str, Any]], int]:
    """A fresh raft-mode cluster: NODES joins (so NODES generations), with a workload on
    ``demo_shop.orders`` that runs until a few seconds after the last generation starts.
    Returns the generations and the number of writes."""
    from cdcgen.adapters.cql import client_for
    from cdcgen_dev.emulator import (
        SandboxCluster,
        WorkloadSpec,
        create_cdc_table,
        orders_table,
        run_workload,
    )
    from cdcgen_dev.emulator.schema_setup import drop_keyspaces

    joined = []
    shutil.rmtree(config.lake_path, ignore_errors=True)
    with client_for(config) as client:
        drop_keyspaces(client, config.source_schema)
        client.session.execute(f"DROP KEYSPACE IF EXISTS {SHOP}", timeout=120)
        cluster = SandboxCluster.from_config(client, config)
        last = None
        for seed in range(NODES):
            result = cluster.join_node(SourceMode.RAFT, seed=seed)
            assert result.generation is not None and result.description is not None
            last = result.generation.timestamp
            joined.append(
                {
                    "node": result.node.name,
                    "generation": result.generation.timestamp.isoformat(timespec="milliseconds"),
                    "streams": result.description.stream_count(),
                }
            )
            say(
                f"      {result.node.name} joined: generation {joined[-1]['generation']} "
                f"({joined[-1]['streams']} streams)"
            )
            if seed == 0:
                create_cdc_table(cluster, orders_table(SHOP))
                say(f"      CDC table {TABLE} created")
        assert last is not None
        duration = max(last - datetime.now(UTC), timedelta(0)) + timedelta(seconds=3)
        report = run_workload(
            cluster, WorkloadSpec(keyspace=SHOP, rate=100, duration=duration, keys=200, seed=1)
        )
        say(f"      workload: {report.writes} writes to {TABLE} over {duration.seconds} s")
    return joined, report.writes


_TASK_START = re.compile(r"\[DAG TEST\] starting task_id=(\S+) map_index=(-?\d+)")


def progress(line: str) -> None:
    """One line per task started by ``airflow dags test`` (and per inline trigger)."""
    match = _TASK_START.search(line)
    if match:
        task, index = match.groups()
        group = task.split(".", 1)[0] if "." in task else ""
        say(f"      task {task}" + (f" [{group} {index}]" if index != "-1" else ""))
    elif "[DAG TEST] running trigger in line" in line:
        say("      a node's clock is not far enough yet: waiting in the trigger")


def run_dag(
    config: PipelineConfig,
    home: Path,
    dag_id: str = "cdc_generations",
    conf: dict[str, Any] | None = None,
) -> dict[str, Any]:
    from cdcgen.airflow.connections import source_connection_for
    from cdcgen.pipeline.changes import SUMMARIES_DIR as CHANGES_SUMMARIES
    from cdcgen_dev.dags_test import dags_test, latest_summary

    source = source_connection_for(config, confidence_window_seconds=CONFIDENCE_SECONDS)
    env = {
        "CDCGEN_TARGET_KEYSPACE": config.target_keyspace,
        "CDCGEN_LAKE_PATH": str(config.lake_path),
        "CDCGEN_REPORT_DIR": str(config.report_dir),
    }
    log = DEMO_DIR / f"airflow-dags-test-{dag_id}.log"
    run = dags_test(
        dag_id, home=home, source=source, env=env, conf=conf, log_path=log, on_line=progress
    )
    say(
        f"      exit status {run.returncode} after {run.seconds} s; the sensor deferred "
        f"{run.deferred_inline()} time(s) to its trigger; full log: {log}"
    )
    folder = config.report_dir / CHANGES_SUMMARIES if dag_id == "cdc_changes" else None
    summary = latest_summary(config.report_dir, since=run.started_at, folder=folder)
    if not run.succeeded or summary is None:
        say(run.tail(40))
        raise DemoFailed(f"the DAG run failed (exit {run.returncode}); see {log}")
    summary["dag_seconds"] = run.seconds
    summary["deferrals"] = run.deferred_inline()
    return summary


def read_back(config: PipelineConfig) -> dict[str, Any]:
    from cdcgen.adapters.readback import compare_with_source

    comparison = compare_with_source(config)
    if comparison.mismatches:
        raise DemoFailed(
            "published tables differ from the source: " + "; ".join(comparison.mismatches)
        )
    return comparison


def count_changes(config: PipelineConfig) -> dict[str, int]:
    """The lake's rows of the demo table against the source log table's (a full scan,
    which only a check like this one may do: the pipeline reads stream by stream)."""
    import pyarrow.dataset as ds

    from cdcgen.adapters.cql import client_for

    with client_for(config) as client:
        source = sum(
            1
            for _ in client.session.execute(
                f'SELECT "cdc$stream_id" FROM {TABLE}_scylla_cdc_log', timeout=60
            )
        )
    root = Path(config.lake_path) / "changes" / TABLE
    lake = ds.dataset(root, format="parquet").count_rows() if root.exists() else 0
    if lake != source:
        raise DemoFailed(f"the lake holds {lake} changes of {TABLE}, the source {source}")
    return {"source": source, "lake": lake}


def report_index(config: PipelineConfig, summary: dict[str, Any]) -> str | None:
    """The report site's index (all runs) if it can be built, else the run's Data Docs."""
    try:
        from cdcgen.reports.site import build_site

        site = build_site(config.report_dir)
        index = getattr(site, "index", None)
        if index and Path(index).exists():
            return str(index)
    except ImportError:
        pass
    report = summary.get("report")
    return str(report) if report else None


def main() -> int:
    began = time.monotonic()
    DEMO_DIR.mkdir(parents=True, exist_ok=True)
    config = demo_config()
    result: dict[str, Any] = {
        "generations_published": 0,
        "streams_published": 0,
        "validation": "not run",
        "report": None,
        "changes_rows": 0,
        "colocation": "not run",
    }
    steps = [
        "1/6 Cassandra sandbox (cdcgen sandbox up)",
        "2/6 Airflow home",
        f"3/6 emulating a raft-mode ScyllaDB cluster (prefix {PREFIX}, {NODES} nodes), "
        "with a workload",
        "4/6 airflow dags test cdc_generations",
        f"5/6 reading {config.target_keyspace} back and comparing with the source",
        f"6/6 airflow dags test cdc_changes ({TABLE}), then the lake against the source",
    ]
    try:
        say(steps[0])
        start_cassandra()
        say(steps[1])
        home = prepare_home()
        say(steps[2])
        joined, writes = emulate_cluster(config)
        say(steps[3])
        summary = run_dag(config, home)
        say(steps[4])
        comparison = read_back(config)
        say(steps[5])
        changes = run_dag(config, home, "cdc_changes", conf={"tables": TABLE})
        counted = count_changes(config)
    except ModuleNotFoundError as exc:
        if not (exc.name or "").startswith("cdcgen"):
            raise
        say(f"demo incomplete: part of the pipeline is not built yet ({exc.name})")
        result.update(status="incomplete", error=f"missing module {exc.name}")
        print(json.dumps(result))
        return 1
    except Exception as exc:
        say(f"demo failed: {type(exc).__name__}: {exc}")
        result.update(status="failed", error=f"{type(exc).__name__}: {exc}")
        print(json.dumps(result))
        return 1

    result.update(
        generations_published=summary["generations_published"],
        streams_published=summary["streams_published"],
        validation=summary["validation"],
        report=report_index(config, summary),
        data_docs=summary.get("reports", []),
        generations_matching_source=comparison.matching,
        sensor_deferrals=summary["deferrals"],
        changes_rows=changes["changes_rows"],
        colocation=changes["colocation"],
        row_checks=changes["checks"],
        changes_matching_source=counted["lake"] == counted["source"],
        watermark=changes["watermarks"].get(TABLE),
        workload_writes=writes,
        target_keyspace=config.target_keyspace,
        lake=str(config.lake_path),
        seconds=round(time.monotonic() - began, 1),
    )
    published, streams = summary["generations_published"], summary["streams_published"]
    say("")
    say(f"Emulated {len(joined)} generations; the DAG published {published} of them")
    say(f"({streams} streams) to {config.target_keyspace}, oldest first.")
    say(f"Validation: {summary['validation']}. Read back: {comparison.matching} of")
    say(f"{comparison.published} published generations match the source exactly.")
    say(f"Changes: {changes['changes_rows']} rows of {TABLE} in the lake (the source's log")
    say(f"table holds {counted['source']}); colocation {changes['colocation']}, row checks")
    say(f"{changes['checks']}; watermark {result['watermark']}.")
    say(f"Report: {result['report']}")
    ok = (
        summary["validation"] == "passed"
        and summary["generations_published"] == len(joined)
        and comparison.matching == len(joined)
        and changes["colocation"] == "passed"
        and changes["changes_rows"] == counted["source"] > 0
    )
    result["status"] = "ok" if ok else "unexpected"
    print(json.dumps(result))
    return 0 if ok else 1


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    sys.exit(main())
