"""The demo's steps other than emulation: sandbox, Airflow home, DAG runs, checks.

Each step either returns what it measured or raises :class:`DemoFailed` saying which
step failed and where to look, so the demo never prints numbers it did not measure.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cdcgen.config import PipelineConfig
from cdcgen_dev.paths import REPO_ROOT

if TYPE_CHECKING:
    from cdcgen.adapters.readback import Comparison
    from cdcgen_dev.cassandra import SandboxUser

#: The demo's own files: lock, DAG logs, lake.
DEMO_DIR = REPO_ROOT / "var" / "demo"
#: The demo's confidence window: short, so the demo does not sit idle for the default 30 s.
CONFIDENCE_SECONDS = 3

Say = Callable[[str], None]


class DemoFailed(Exception):
    """A step did not do its job; the message says which and where to look."""


def start_cassandra(user: SandboxUser, say: Say) -> list[str]:
    """Lease the running sandbox (either topology), else start one node; its contact points.

    A lease, not a bare start: a Cassandra the demo had to start is stopped when the
    demo releases it (unless someone else uses it by then); one already running stays.
    """
    from cdcgen_dev.cassandra import running_topology

    before = running_topology()
    sandbox = user.use_running(1)
    what = f"already running ({before})" if before else f"started ({sandbox.topology.name})"
    say(f"      Cassandra {what} at {', '.join(sandbox.contact_points)}")
    return sandbox.contact_points


def sandbox_pids() -> set[int]:
    """Pids of every live sandbox node: shared, so never ended with the demo's children."""
    from cdcgen_dev.cassandra import status_report

    return {int(node["pid"]) for node in status_report()["nodes"] if node.get("pid")}


def prepare_home(say: Say, python: Path | None = None) -> Path:
    """The developer's Airflow home (``var/airflow``); with another virtualenv's ``python``
    (the provider from its wheel), a home of the demo's own, migrated by that Airflow."""
    from cdcgen_dev.airflow_home import ensure_home, migrate, write_config

    if python is None:
        home = ensure_home()
    else:
        home = DEMO_DIR / "airflow-provider"
        write_config(home)
        migrate(home, python=python)
    say(f"      {home}" + (f" (Airflow of {python.parent.parent})" if python else ""))
    return home


_TASK_START = re.compile(r"\[DAG TEST\] starting task_id=(\S+) map_index=(-?\d+)")


def progress(say: Say) -> Callable[[str], None]:
    """A line printer for ``airflow dags test``'s output: one line per task started
    (and per inline trigger), the rest stays in the log file."""

    def on_line(line: str) -> None:
        match = _TASK_START.search(line)
        if match:
            task, index = match.groups()
            group = task.split(".", 1)[0] if "." in task else ""
            say(f"      task {task}" + (f" [{group} {index}]" if index != "-1" else ""))
        elif "[DAG TEST] running trigger in line" in line:
            say("      a node's clock is not far enough yet: waiting in the trigger")

    return on_line


@dataclass(frozen=True)
class DagRunner:
    """Runs the demo's DAGs with ``airflow dags test`` against its home and settings."""

    config: PipelineConfig
    home: Path
    say: Say
    connection_extra: Mapping[str, str]
    #: Another virtualenv's interpreter whose Airflow runs the DAGs (None: this one's).
    python: Path | None = None

    def run(
        self,
        dag_id: str,
        conf: dict[str, Any] | None = None,
        summaries: Path | None = None,
        *,
        summary_expected: bool = True,
        extra_env: Mapping[str, str] | None = None,
    ) -> dict[str, Any]:
        """Run ``dag_id``; the summary it wrote (``summaries``: its folder), plus timings.

        ``summary_expected=False`` for a DAG that writes none (maintenance): then only
        its exit status counts. ``extra_env``: more variables (another connection).
        """
        from cdcgen.airflow.connections import source_connection_for
        from cdcgen_dev.dags_test import dags_test, latest_summary

        config = self.config
        source = source_connection_for(
            config, confidence_window_seconds=CONFIDENCE_SECONDS, **self.connection_extra
        )
        env = {
            "CDCGEN_TARGET_KEYSPACE": config.target_keyspace,
            "CDCGEN_LAKE_PATH": str(config.lake_path),
            "CDCGEN_REPORT_DIR": str(config.report_dir),
            **(extra_env or {}),
        }
        log = DEMO_DIR / f"airflow-dags-test-{dag_id}.log"
        run = dags_test(
            dag_id,
            home=self.home,
            source=source,
            env=env,
            conf=conf,
            log_path=log,
            on_line=progress(self.say),
            python=self.python,
        )
        self.say(
            f"      exit status {run.returncode} after {run.seconds} s; the sensor deferred "
            f"{run.deferred_inline()} time(s) to its trigger; full log: {log}"
        )
        summary = latest_summary(config.report_dir, since=run.started_at, folder=summaries)
        if not run.succeeded or (summary_expected and summary is None):
            self.say(run.tail(40))
            raise DemoFailed(f"the {dag_id} run failed (exit {run.returncode}); see {log}")
        result = dict(summary or {})
        result["dag_seconds"] = run.seconds
        result["deferrals"] = run.deferred_inline()
        return result


def changes_summaries(config: PipelineConfig) -> Path:
    from cdcgen.pipeline.changes_plan import SUMMARIES_DIR

    return Path(config.report_dir) / SUMMARIES_DIR


def read_back(config: PipelineConfig) -> Comparison:
    """The published tables against the source, generation by generation."""
    from cdcgen.adapters.readback import compare_with_source

    comparison = compare_with_source(config)
    if comparison.mismatches:
        raise DemoFailed(
            "published tables differ from the source: " + "; ".join(comparison.mismatches)
        )
    return comparison


def still_v1(config: PipelineConfig) -> bool:
    """Whether readers must still use the V1 tables (no ``rewritten`` marker yet)."""
    from cdcgen.adapters.cql import client_for
    from cdcgen.adapters.v1_sources import detect_legacy_mode
    from cdcgen.core.generation import SourceMode

    with client_for(config) as client:
        return detect_legacy_mode(client, config.source_schema) is SourceMode.V1


def count_changes(config: PipelineConfig, table: str) -> dict[str, int]:
    """The lake's rows of ``table`` (read with delta-rs, as a user without Spark would)
    against the source log table's (a full scan, which only a check like this one may
    do: the pipeline reads stream by stream); ``version`` is the table's."""
    from deltalake import DeltaTable

    from cdcgen.adapters.cql import client_for
    from cdcgen.changes.layout import read_delta
    from cdcgen.core.cdc_log import STREAM_ID, TableRef, quote_column

    log_table = TableRef.parse(table).qualified_log
    with client_for(config) as client:
        rows = client.session.execute(
            f"SELECT {quote_column(STREAM_ID)} FROM {log_table}", timeout=60
        )
        source = sum(1 for _ in rows)
    root = Path(config.lake_path) / "changes" / table
    if not DeltaTable.is_deltatable(str(root)):
        raise DemoFailed(f"{root} is not a Delta table")
    delta = DeltaTable(str(root))
    lake = read_delta(root, columns=[]).num_rows
    if lake != source:
        raise DemoFailed(f"the lake holds {lake} changes of {table}, the source {source}")
    return {"source": source, "lake": lake, "version": int(delta.version())}


def report_index(config: PipelineConfig, summary: Mapping[str, Any]) -> str | None:
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
