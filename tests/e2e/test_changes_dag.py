"""``airflow dags test cdc_changes`` end to end, against a sandbox workload.

One emulated raft cluster (module fixture): a node joins, two CDC tables are created,
a second node joins (a new generation about 7 s later) and a workload writes across
the switch; a second workload on ``orders_bad`` misroutes some of its log rows. Then
the DAG runs for real (deferred clock wait, spark-submit, GX row checks) and the lake
is compared with a full scan of each log table (which only a test may do):

* a run whose Spark job is killed mid-way (SIGKILL of spark-submit's process group
  after its first lake files appear) fails with part of the changes in the lake;
* the next run, both tables on a Spark standalone cluster (executors in the workers'
  own JVMs, without the driver's environment), resumes from the checkpoints: every
  row of ``orders`` is in the lake exactly once and in per-key order, across both
  generations, and the watermark is stored; the misrouted rows fail the colocation
  check, named in the run's report page;
* a third, into an S3 lake with checkpoints of its own, lands every change once; it
  sends each table's metrics through Airflow's StatsD (tagged by cluster and table)
  with its summary's values, and, its watermark further behind than a 1 s
  ``CDCGEN_ALERT_LAG_SECONDS``, fails in ``check_lag`` alone, naming table, lag and
  threshold, an alert the DAG's notifier posts to the ``cdcgen_alerts`` webhook.
* a fourth, the DAG built with ``follow``, extracts a new workload's writes cycle by
  cycle while they go on, every change once.

The runs share one workload: they are this module's time. That a run with nothing new
writes nothing is checked where it costs no DAG run:
``tests/integration/test_changes_extract.py`` reruns the extraction.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import psutil
import pyarrow.parquet as pq
import pytest
from dag_scenarios import CLUSTER_ENV, Scenario, assert_ran_on, on_cluster
from lake_files import committed_files
from lineage_events import finished_tasks, lineage_env
from observability import Listener, listening

from cdcgen.adapters import delta_tables
from cdcgen.adapters.lake_store import LakeLocation, LakeRoot
from cdcgen.airflow.connections import DEFAULT_SPARK_MASTER
from cdcgen.core.generation import SourceMode
from cdcgen.core.lineage_names import FILE_NAMESPACE as FILE
from cdcgen_dev.spark_cluster import StandaloneCluster

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.integration,
    pytest.mark.timeout(2400),
]

KEYSPACE = "e2e_chg_shop"
TABLES = {"orders": f"{KEYSPACE}.orders", "bad": f"{KEYSPACE}.orders_bad"}
CONNECTION = {"confidence_window_seconds": 1}
# Four lake buckets (a bucket is what a resume replaces), all in one Spark job: each
# job pays for its own row checks, so the runs after the kill check one job per table.
CHANGES_ENV = {"CDCGEN_CHANGES_BUCKETS": "4"}
# A following run's length: writes go on for most of it, cycles every 10 s.
FOLLOW_SECONDS = 40
# The killed run writes one bucket per job: the kill lands between committed jobs.
ONE_BUCKET_PER_JOB = {"CDCGEN_CHANGES_BUCKETS_PER_JOB": "1"}

Key = tuple[str, str, int]  # (stream hex, cdc$time, batch_seq_no)


@dataclass
class Workload:
    scenario: Scenario
    switch: datetime  # the second generation's timestamp
    misrouted: int


@pytest.fixture
def workload(scenario: Callable[[str, SourceMode], Scenario]) -> Iterator[Workload]:
    from cdcgen_dev.emulator import WorkloadSpec, create_cdc_table, orders_table, run_workload

    scn = scenario("chg", SourceMode.RAFT)
    with scn.client() as client:
        client.session.execute(f"DROP KEYSPACE IF EXISTS {KEYSPACE}", timeout=120)
        cluster = scn.cluster(client)
        cluster.join_node(SourceMode.RAFT, shards=3, vnodes=4, seed=21)
        create_cdc_table(cluster, orders_table(KEYSPACE))
        create_cdc_table(cluster, orders_table(KEYSPACE, table="orders_bad"))
        second = cluster.join_node(SourceMode.RAFT, shards=2, vnodes=4, seed=22)
        assert second.generation is not None
        switch = second.generation.timestamp
        # Write until 3 s past the switch: changes in both generations.
        duration = max(switch - datetime.now(UTC), timedelta(0)) + timedelta(seconds=3)
        run_workload(
            cluster,
            WorkloadSpec(keyspace=KEYSPACE, rate=120, duration=duration, keys=100, seed=23),
        )
        bad = run_workload(
            cluster,
            WorkloadSpec(
                keyspace=KEYSPACE,
                table="orders_bad",
                rate=80,
                duration=timedelta(seconds=1),
                keys=40,
                seed=24,
                misroute_fraction=0.05,
            ),
        )
    yield Workload(scn, switch, bad.misrouted)


def run_changes(
    scn: Scenario,
    tables: str,
    on_line: Callable[[str], None] | None = None,
    env: dict[str, str] | None = None,
) -> Any:
    return scn.run_dag(
        "cdc_changes",
        conf={"tables": tables},
        extra=CONNECTION,
        env={**CHANGES_ENV, **(env or {})},
        on_line=on_line,
        summaries=scn.config.report_dir / "summaries" / "changes",
    )


def changes_result(scn: Scenario, table: str) -> dict[str, Any]:
    """The newest result file the extract job wrote for ``table``."""
    import json

    from cdcgen.core.user_text import file_name
    from cdcgen.pipeline.result_files import RESULTS_DIR

    folder = Path(scn.config.report_dir) / RESULTS_DIR
    files = sorted(folder.glob(f"*/{file_name(table)}.*json"), key=lambda p: p.stat().st_mtime)
    assert files, f"no result file for {table} under {folder}"
    result: dict[str, Any] = json.loads(files[-1].read_text())
    return result


def source_rows(scn: Scenario, table: str) -> dict[Key, tuple[int, int]]:
    """Ground truth by a full scan: key -> (pk, position in the source's clustering order)."""
    with scn.client() as client:
        rows = client.session.execute(
            f'SELECT "cdc$stream_id", "cdc$time", "cdc$batch_seq_no", pk '
            f"FROM {KEYSPACE}.{table}_scylla_cdc_log",
            timeout=60,
        )
        return {(bytes(r[0]).hex(), str(r[1]), r[2]): (r[3], i) for i, r in enumerate(rows)}


def lake_rows(scn: Scenario, table: str, lake: LakeRoot | None = None) -> list[dict[str, Any]]:
    root = LakeLocation.of(lake or scn.config.lake_path) / "changes" / f"{KEYSPACE}.{table}"
    rows = []
    for file in delta_tables.committed_files(root) if delta_tables.is_delta(root) else []:
        columns = ["cdc$stream_id", "cdc$time", "cdc$batch_seq_no", "pk"]
        filesystem, path = file.arrow()
        for row in pq.read_table(path, columns=columns, filesystem=filesystem).to_pylist():
            row["file"] = file.uri
            rows.append(row)
    return rows


def key_of(row: dict[str, Any]) -> Key:
    return (row["cdc$stream_id"].hex(), row["cdc$time"], row["cdc$batch_seq_no"])


def assert_exactly_once_in_key_order(
    scn: Scenario, table: str, lake: LakeRoot | None = None
) -> int:
    truth = source_rows(scn, table)
    rows = lake_rows(scn, table, lake)
    counts = Counter(key_of(r) for r in rows)
    assert [k for k, n in counts.items() if n > 1] == [], "duplicated changes in the lake"
    missing, unexpected = set(truth) - set(counts), set(counts) - set(truth)
    assert not missing and not unexpected, f"missing {len(missing)}, unexpected {len(unexpected)}"
    by_key_file: dict[tuple[int, str], list[Key]] = defaultdict(list)
    for row in rows:
        by_key_file[(row["pk"], row["file"])].append(key_of(row))
    for keys in by_key_file.values():  # each key's changes in the source's order
        assert keys == sorted(keys, key=lambda k: truth[k][1])
    return len(truth)


def test_changes_dag_end_to_end(
    workload: Workload,
    spark_standalone: StandaloneCluster,
    s3_server: Any,
    s3_lake: LakeLocation,
    tmp_path: Path,
) -> None:
    """One workload, three runs (they are most of this module's time): a run killed
    mid-way; the next, on the standalone cluster with both tables, resumes exactly once
    and names the misrouted rows; a third lands everything in an S3 lake with its own
    checkpoints."""
    scn = workload.scenario
    partial, total = a_killed_extraction_leaves_part_of_the_lake(scn)
    resumed_on_the_cluster_exactly_once(workload, spark_standalone, partial, total)
    everything_lands_in_an_s3_lake_with_the_connection_s_access(scn, s3_server, s3_lake, total)
    a_following_run_extracts_writes_as_their_windows_close(scn, tmp_path)


def a_killed_extraction_leaves_part_of_the_lake(scn: Scenario) -> tuple[int, int]:
    """SIGKILL of spark-submit's process group once its first job is committed: the run
    fails with part of the changes in the lake. Returns (rows in the lake, rows in the
    source)."""
    lake = Path(scn.config.lake_path) / "changes" / TABLES["orders"]
    killed = threading.Event()
    watcher_errors: list[BaseException] = []

    def kill_spark_when_rows_land() -> None:
        try:
            kill_after_first_commit()
        except BaseException as error:  # reported by the assertion below, not lost
            watcher_errors.append(error)
            raise

    def kill_after_first_commit() -> None:
        deadline = time.monotonic() + 600
        while time.monotonic() < deadline and not killed.is_set():
            if lake.exists() and committed_files(lake):  # a first job is committed
                for process in spark_submit_processes(Path(scn.config.report_dir)):
                    for doomed in [*process.children(recursive=True), process]:
                        with contextlib.suppress(psutil.NoSuchProcess):
                            doomed.kill()
                    killed.set()
            time.sleep(0.05)

    def on_line(line: str) -> None:
        if "starting task_id=table.extract" in line and not watcher.is_alive():
            watcher.start()

    watcher = threading.Thread(target=kill_spark_when_rows_land, daemon=True)
    run, _ = run_changes(scn, TABLES["orders"], on_line=on_line, env=ONE_BUCKET_PER_JOB)
    assert not watcher_errors, f"the watcher failed: {watcher_errors!r}"
    assert killed.is_set(), "the Spark job finished before it could be killed"
    assert not run.succeeded
    partial = len(lake_rows(scn, "orders"))
    total = len(source_rows(scn, "orders"))
    assert 0 < partial < total, "the kill came before any or after every commit"
    return partial, total


def resumed_on_the_cluster_exactly_once(
    workload: Workload, spark_standalone: StandaloneCluster, partial: int, total: int
) -> None:
    """Both tables on the standalone cluster (executors in the workers' JVMs, without
    the driver's environment): orders resumes from its checkpoints, every change once
    and in per-key order; orders_bad fails its colocation check, named in its page."""
    scn = workload.scenario
    before = on_cluster(scn, spark_standalone)
    events = scn.config.report_dir.parent / "openlineage"  # the provider's file transport
    env = {**CLUSTER_ENV, **lineage_env(events)}
    run, summary = run_changes(scn, ",".join(TABLES.values()), env=env)
    assert_ran_on(spark_standalone, before, apps=2)  # one job per table
    each_extract_reports_its_table_s_lineage(scn, events)
    scn.spark_master = DEFAULT_SPARK_MASTER
    # orders_bad fails its colocation check, so the run fails; orders is complete.
    assert not run.succeeded, run.tail(60)
    # The wait ran: it deferred, or every clock was already past end + leeway + confidence.
    assert run.deferred_inline() >= 1 or "every node is past" in run.output, run.tail(60)
    orders, bad = summary["tables"][TABLES["orders"]], summary["tables"][TABLES["bad"]]
    assert orders["status"] == "done" and orders["colocation"] == "passed"
    assert assert_exactly_once_in_key_order(scn, "orders") == total > 500
    # At least what the killed run had not committed; windows it wrote without recording
    # their checkpoints are extracted again, replacing their rows (never adding to them).
    assert total - partial <= orders["rows"] <= total
    assert orders["watermark"] is not None
    with scn.client() as client:
        from cdcgen.adapters.checkpoints import CqlCheckpointStore
        from cdcgen.core.cdc_log import TableRef

        store = CqlCheckpointStore(client, scn.config.target_keyspace)
        progress = store.progress(TableRef(KEYSPACE, "orders"))
        bad_checkpoints = store.checkpoints(TableRef(KEYSPACE, "orders_bad"))
    assert progress.watermark is not None
    assert progress.watermark.isoformat() == orders["watermark"]
    assert progress.watermark > workload.switch  # past the generation switch

    assert bad["status"] == "row checks failed" and bad["colocation"] == "failed"
    assert summary["colocation"] == "failed"
    assert any(TABLES["bad"] in p for p in summary["problems"])
    assert workload.misrouted > 0
    # The run's checks page (on the report site) names the misrouted rows.
    result = changes_result(scn, TABLES["bad"])
    # Its failing jobs were quarantined (reverted), and no checkpoint names their versions.
    assert result["quarantined_versions"]
    assert not {c.lake_version for c in bad_checkpoints} & set(result["quarantined_versions"])
    (colocation,) = [c for c in result["checks"]["checks"] if "colocation" in c["check"]]
    assert colocation["observed"] >= workload.misrouted and colocation["samples"]
    page = Path(result["checks"]["page"]).read_text()
    for sample in colocation["samples"]:
        assert sample["stream_hex"] in page and sample["cdc_time"] in page
    assert any("colocation" in line for line in bad["failed_checks"])


def everything_lands_in_an_s3_lake_with_the_connection_s_access(
    scn: Scenario, s3_server: Any, s3_lake: LakeLocation, total: int
) -> None:
    """The Spark job writes the Delta table through S3A and the lake's log store, with
    the ``cdcgen_lake`` connection's access only (the run's own AWS_* blanked), and
    checkpoints of its own (another target keyspace): every change, once. The run's
    metrics and its lag alert: :func:`the_run_s_metrics_and_its_lag_alert`."""
    import json

    access = s3_server.env
    connection = {
        "conn_type": "aws",
        "login": access["AWS_ACCESS_KEY_ID"],
        "password": access["AWS_SECRET_ACCESS_KEY"],
        "extra": {"endpoint_url": access["AWS_ENDPOINT_URL"]},
    }
    blank = dict.fromkeys(("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_ENDPOINT_URL"), "")
    env = {
        "CDCGEN_LAKE_PATH": s3_lake.uri,
        "AIRFLOW_CONN_CDCGEN_LAKE": json.dumps(connection),
        "CDCGEN_TARGET_KEYSPACE": f"{scn.config.target_keyspace}_s3",
    }
    local_lake = Path(scn.config.lake_path)
    local_files = sorted(p for p in local_lake.rglob("*") if p.is_file())
    with listening() as heard:
        alert = {**heard.env(tags=True), "CDCGEN_ALERT_LAG_SECONDS": "1"}
        run, summary = run_changes(scn, TABLES["orders"], env={**blank, **env, **alert})
    the_run_s_metrics_and_its_lag_alert(scn, heard, run, summary)
    orders = summary["tables"][TABLES["orders"]]
    assert orders["status"] == "done" and orders["colocation"] == "passed"
    assert orders["rows"] == assert_exactly_once_in_key_order(scn, "orders", s3_lake) == total
    assert access["AWS_SECRET_ACCESS_KEY"] not in run.output
    # Nothing went to the local default lake.
    assert sorted(p for p in local_lake.rglob("*") if p.is_file()) == local_files


def a_following_run_extracts_writes_as_their_windows_close(scn: Scenario, home: Path) -> None:
    """The same DAG built with ``follow`` (its own DAG file, the only one of its folder):
    one spark-submit follows ``orders`` for a while, cycle after cycle, as a workload
    writes; every change of the log (the earlier runs' and the new writes) is in the
    local lake once and in per-key order, and the result lists the cycles."""
    from cdcgen_dev.emulator import WorkloadSpec, run_workload

    folder = home / "follow_dags"
    folder.mkdir()
    (folder / "cdc_changes.py").write_text(
        "from datetime import timedelta\n\n"
        "from cdcgen.airflow.dag_factories import cdc_changes_dag\n\n"
        f"dag = cdc_changes_dag(follow=timedelta(seconds={FOLLOW_SECONDS}))\n"
    )
    wrote: list[int] = []

    def write_while_following() -> None:
        with scn.client() as client:
            cluster = scn.cluster(client)
            spec = WorkloadSpec(
                keyspace=KEYSPACE, rate=60, duration=timedelta(seconds=12), keys=100, seed=25
            )
            wrote.append(run_workload(cluster, spec).writes)

    writer = threading.Thread(target=write_while_following, daemon=True)

    def on_line(line: str) -> None:
        if "starting task_id=table.extract" in line and not writer.is_alive():
            writer.start()

    env = {"AIRFLOW__CORE__DAGS_FOLDER": str(folder)}
    run, summary = run_changes(scn, TABLES["orders"], on_line=on_line, env=env)
    writer.join(timeout=120)
    assert run.succeeded, run.tail(80)
    assert wrote and wrote[0] > 0, "the workload wrote nothing while the run followed"
    orders = summary["tables"][TABLES["orders"]]
    assert orders["status"] == "done" and orders["colocation"] == "passed"
    assert orders["rows"] > 0
    assert assert_exactly_once_in_key_order(scn, "orders") > 0
    cycles = changes_result(scn, TABLES["orders"])["cycles"]
    assert len(cycles) >= 2 and sum(c["rows"] for c in cycles) == orders["rows"]
    last = datetime.fromisoformat(cycles[-1]["closed_until"])
    assert datetime.fromisoformat(orders["watermark"]) == last


def the_run_s_metrics_and_its_lag_alert(
    scn: Scenario, heard: Listener, run: Any, summary: dict[str, Any]
) -> None:
    """Rows and watermark lag of the table, tagged, as its summary says (the lag from the
    summary's watermark to the moment it was sent); the lag above the threshold fails
    ``check_lag`` alone (the summary is ``ok``), and the notifier posts that failure."""
    import sqlite3

    from cdcgen.core.time import parse_moment

    table = summary["tables"][TABLES["orders"]]
    tags = {"cluster": "cdc_source", "table": TABLES["orders"]}
    rows = heard.one("cdcgen.changes.rows_extracted", **tags)
    assert rows.kind == "c" and rows.value == table["rows"] > 0
    lag = heard.one("cdcgen.changes.watermark_lag_seconds", **tags)
    watermark = parse_moment(table["watermark"]).timestamp()
    assert lag.kind == "g" and 1 < lag.value <= lag.at - watermark + 0.01 < lag.value + 60

    assert not run.succeeded and summary["status"] == "ok", run.tail(60)
    with sqlite3.connect(scn.home / "airflow.db") as db:
        states = dict(
            db.execute(
                "SELECT task_id, state FROM task_instance WHERE dag_id = 'cdc_changes' "
                "AND run_id = ? AND task_id NOT LIKE 'table.%'",
                (summary["run_id"],),
            )
        )
    assert states == {"plan": "success", "summarize": "success", "check_lag": "failed"}
    said = (
        f"{TABLES['orders']} on cdc_source: {lag.value:g} s behind its watermark, "
        "above CDCGEN_ALERT_LAG_SECONDS=1"
    )
    assert f"lag above the alert threshold (not retried): {said}" in run.output, run.tail(60)
    (posted,) = heard.alerts
    assert posted["kind"] == "task failed" and posted["task_id"] == "check_lag"
    assert posted["dag_id"] == "cdc_changes" and posted["run_id"] == summary["run_id"]
    assert said in posted["message"] and "Next:" in posted["message"]


def each_extract_reports_its_table_s_lineage(scn: Scenario, folder: Path) -> None:
    """Each mapped extract (its table known only when it runs; orders_bad's failed on its
    row checks, and says so too) read its own table's CDC log table on the source
    cluster (the namespace of its first contact point) and wrote its own Delta table of
    the lake (``file`` and the folder)."""
    c = scn.config
    cluster = f"cassandra://{c.contact_points[0]}:{c.port}"
    tasks = finished_tasks(folder, "cdc_changes")
    extract = tasks["table.extract"]
    assert sorted(extract.inputs) == [0, 1], extract
    pairs = {
        (frozenset(extract.inputs[index]), frozenset(extract.outputs[index]))
        for index in extract.inputs
    }
    assert pairs == {
        (
            frozenset({(cluster, f"{table}_scylla_cdc_log")}),
            frozenset({(FILE, f"{c.lake_path}/changes/{table}")}),
        )
        for table in TABLES.values()
    }
    for quiet in ("plan", "table.wait", "summarize"):
        assert quiet in tasks, sorted(tasks)
        assert not tasks[quiet].all_inputs() and not tasks[quiet].all_outputs(), quiet


def spark_submit_processes(report_dir: Path) -> list[psutil.Process]:
    """spark-submit JVMs (``SparkSubmit``) running this scenario's changes job: its result
    file is under ``report_dir``. Not any other: a test session beside this one (``make
    test`` runs two) may be running a changes job of its own, which a kill must spare."""
    found: list[psutil.Process] = []
    for process in psutil.process_iter(["cmdline"]):
        command = " ".join(process.info["cmdline"] or ())
        if (
            "org.apache.spark.deploy.SparkSubmit" in command
            and "extract_changes.py" in command
            and f"--output {report_dir}/" in command
        ):
            found.append(process)
    return found
