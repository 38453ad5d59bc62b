"""The e2e scenario harness: one emulated cluster, one Airflow home, one lake per test.

Each scenario emulates a ScyllaDB cluster under its own keyspace prefix (so tests cannot
see each other's generations), runs real DAGs with ``airflow dags test`` in a subprocess
against a private copy of the migrated Airflow home (SQLite), and reads results back.
The fixtures that build scenarios are in ``conftest.py``.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

from cdcgen.adapters.readback import Comparison, compare_with_source
from cdcgen.airflow.connections import DEFAULT_SPARK_MASTER, source_connection_for
from cdcgen.config import PipelineConfig
from cdcgen.spark_runtime.shipping import ARCHIVE_PREFIX
from cdcgen_dev.dags_test import DagTestRun, dags_test, latest_summary
from cdcgen_dev.paths import REPO_ROOT
from cdcgen_dev.spark_cluster import StandaloneCluster

RING_DELAY = timedelta(seconds=1)
LOGS = REPO_ROOT / "var" / "e2e-logs"


@dataclass
class Scenario:
    """One emulated cluster, one Airflow home, one lake and report directory."""

    name: str
    config: PipelineConfig
    home: Path
    runs: list[DagTestRun] = field(default_factory=list)
    #: The ``cdcgen_spark`` connection's master; a test sets a standalone cluster's URL.
    spark_master: str = DEFAULT_SPARK_MASTER

    def client(self) -> Any:
        from cdcgen.adapters.cql import client_for

        return client_for(self.config)

    def cluster(self, client: Any) -> Any:
        from cdcgen_dev.emulator import SandboxCluster

        return SandboxCluster.from_config(client, self.config)

    def run(
        self,
        conf: dict[str, Any] | None = None,
        extra: dict[str, Any] | None = None,
        on_line: Callable[[str], None] | None = None,
        env: dict[str, str] | None = None,
    ) -> tuple[DagTestRun, dict[str, Any]]:
        """``airflow dags test cdc_generations``; returns the run and its summary."""
        return self.run_dag("cdc_generations", conf, extra, on_line, env)

    def run_dag(
        self,
        dag_id: str,
        conf: dict[str, Any] | None = None,
        extra: dict[str, Any] | None = None,
        on_line: Callable[[str], None] | None = None,
        env: dict[str, str] | None = None,
        summaries: Path | None = None,
    ) -> tuple[DagTestRun, dict[str, Any]]:
        """Run ``dag_id``; returns the run and the summary it wrote (``summaries``: the
        folder it writes them to, default the generations DAG's)."""
        c = self.config
        source = source_connection_for(c, **{"clock_wait_timeout_seconds": 300, **(extra or {})})
        env = {
            "CDCGEN_TARGET_KEYSPACE": c.target_keyspace,
            "CDCGEN_LAKE_PATH": str(c.lake_path),
            "CDCGEN_REPORT_DIR": str(c.report_dir),
            **(env or {}),
        }
        # Kept outside tmp_path (which pytest rotates away): var/e2e-logs/<scenario>/.
        log = LOGS / self.name / f"{dag_id}-{len(self.runs) + 1}.log"
        run = dags_test(
            dag_id,
            home=self.home,
            source=source,
            env=env,
            conf=conf,
            log_path=log,
            on_line=on_line,
            spark_master=self.spark_master,
        )
        self.runs.append(run)
        summary = latest_summary(c.report_dir, since=run.started_at, folder=summaries) or {}
        return run, summary

    def compare(self) -> Comparison:
        return compare_with_source(self.config)

    def asset_events(self) -> list[str]:
        """``extra`` of every event of this scenario's published-generations Asset."""
        from cdcgen.airflow.assets import asset_uri

        with sqlite3.connect(self.home / "airflow.db") as db:
            rows = db.execute(
                "SELECT e.extra FROM asset_event e JOIN asset a ON a.id = e.asset_id "
                "WHERE a.uri = ?",
                (asset_uri(self.config),),
            )
            return [row[0] for row in rows]


#: The Spark driver (spark-submit under Airflow) binds to loopback, where the cluster is.
CLUSTER_ENV = {"SPARK_LOCAL_IP": "127.0.0.1"}


def on_cluster(scenario: Scenario, cluster: StandaloneCluster) -> set[str]:
    """Point ``scenario``'s Spark connection at ``cluster``; returns the applications it
    has already completed (to tell this test's from others' with :func:`assert_ran_on`)."""
    assert Path(scenario.config.lake_path).is_absolute()
    scenario.spark_master = cluster.master_url
    return {app["id"] for app in cluster.completed_apps()}


def assert_ran_on(cluster: StandaloneCluster, before: set[str], apps: int) -> None:
    """``apps`` Spark applications finished on ``cluster`` since ``before``, each with an
    executor on both workers, tasks run in executors, every executor that ran one given
    the package the job shipped, none failing.

    Spark fetches an added file when an executor runs its first task, and a small job may
    leave one executor idle: the package is required where a task ran.
    """
    finished = [a for a in cluster.completed_apps() if a["id"] not in before]
    assert len(finished) == apps and all(a["state"] == "FINISHED" for a in finished), finished
    for app in finished:
        executors = [p for p in cluster.executor_dirs() if p.parent.name == app["id"]]
        assert len(executors) == 2, (app, executors)
        busy = 0
        for executor in executors:
            stderr = (executor / "stderr").read_text(errors="replace")
            assert "Traceback" not in stderr, f"{executor}/stderr:\n{stderr[-3000:]}"
            if "Running task" in stderr:
                busy += 1
                shipped = list(executor.glob(f"{ARCHIVE_PREFIX}*.zip"))
                assert shipped, f"no cdcgen shipped to {executor}"
        assert busy, f"no task of {app['id']} ran in an executor"


def assert_ok(run: DagTestRun) -> None:
    assert run.succeeded, f"airflow dags test failed ({run.returncode}):\n{run.tail(80)}"
