"""``airflow dags test cdc_generations`` end to end, against the Cassandra sandbox.

Each test emulates a ScyllaDB cluster under its own keyspace prefix (so tests
cannot see each other's generations), runs the real DAG in a subprocess against a
private copy of the migrated Airflow home (SQLite), then reads the published
tables back and compares them with what the source says.  Every run really
defers the mapped sensor to its trigger (inline under ``dags test``), really runs
spark-submit (on ``local[2]``; the raft scenario's first run on a Spark standalone
cluster) and really runs the GX suites.

The gossip mode (only the current generation can be found; its ring, from
``system.local``/``system.peers``, has no shard counts, so each node's ranges are checked
for agreement), the V1 mode (published from the V1 tables, the 4.3 -> 4.4 rewrite,
published again from V2) and the tablets mode (a table's first stream set, then every
tablet split) are ``make demo``'s in those modes: ``tests/e2e/test_demo.py`` runs and
checks them, so they are not run a second time here.

Timing: a generation costs about a Spark job plus a GX validation on 2 cores, so
the scenarios keep to the fewest generations that still prove each point; the
ring delay is 1 s, so a fresh generation starts operating about 12 s after it is
created (2 x ring delay + leeway, then + leeway for every clock).
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from dag_scenarios import CLUSTER_ENV, Scenario, assert_ok, assert_ran_on, on_cluster
from lineage_events import finished_tasks, lineage_env
from map_indexes import rendered_map_indexes
from observability import Listener, listening

from cdcgen.adapters.readback import Comparison
from cdcgen.airflow.connections import DEFAULT_SPARK_MASTER
from cdcgen.core.generation import SourceMode
from cdcgen.core.lineage_names import FILE_NAMESPACE as FILE
from cdcgen_dev.spark_cluster import StandaloneCluster

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.integration,
    pytest.mark.timeout(1200),
]

# --- the scenarios --------------------------------------------------------------------


def the_cluster_s_metrics_name_it(heard: Listener, summary: dict[str, Any]) -> None:
    """Plain StatsD keeps no tags: the cluster (the source connection) ends each name.
    Nothing left unpublished; the newest publication's delay measured from its
    timestamp to the run's summary, which came just before the packet."""
    from cdcgen.core.time import parse_moment

    waiting = heard.one("cdcgen.generations.unpublished.cdc_source")
    assert waiting.kind == "g" and waiting.value == 0 == summary["generations_detected"] - 2
    delay = heard.one("cdcgen.generations.publication_delay_seconds.cdc_source")
    newest = max(parse_moment(iso) for iso in summary["published"]).timestamp()
    assert delay.kind == "g" and 0 < delay.value <= delay.at - newest + 0.01 < delay.value + 30
    assert all(not p.tags for p in heard.cdcgen()), heard.cdcgen()


def test_raft_generations_published_as_at_source(
    scenario: Callable[..., Scenario], spark_standalone: StandaloneCluster
) -> None:
    # Its first run's Spark job on the standalone cluster: executors in the workers' own JVMs.
    scn = scenario("raft", SourceMode.RAFT)
    with scn.client() as client:
        cluster = scn.cluster(client)
        joined = [cluster.join_node(SourceMode.RAFT, seed=s) for s in (1, 2)]
        # node2's clock an hour behind: nothing may be treated as started until it catches up.
        cluster.set_clock_skew("node2", timedelta(hours=-1))

    def catch_up_once_deferred(line: str) -> None:
        # The sensor handed the wait to its trigger (run inline by `dags test`): let the
        # lagging clock catch up a moment later, as NTP would.
        if "[DAG TEST] running trigger in line" in line and not catch_up_started.is_set():
            catch_up_started.set()
            catch_up.start()

    def reset_skew() -> None:
        time.sleep(3)
        with scn.client() as client:
            scn.cluster(client).set_clock_skew("node2", timedelta(0))

    catch_up = threading.Thread(target=reset_skew, daemon=True)
    catch_up_started = threading.Event()
    before = on_cluster(scn, spark_standalone)
    with listening() as heard:  # Airflow's metrics, to plain StatsD (no tags)
        env = {**CLUSTER_ENV, **heard.env(tags=False)}
        run, summary = scn.run(on_line=catch_up_once_deferred, env=env)
    assert_ok(run)
    assert_ran_on(spark_standalone, before, apps=2)  # one extract job per generation
    the_cluster_s_metrics_name_it(heard, summary)
    scn.spark_master = DEFAULT_SPARK_MASTER
    assert run.deferred_inline() >= 1, run.tail(80)
    assert "node node2 clock" in run.output  # the wait named the lagging node
    assert summary["generations_published"] == 2
    assert summary["validation"] == "passed"
    assert summary["streams_published"] == sum(j.description.stream_count() for j in joined)
    comparison = scn.compare()
    assert comparison == Comparison(published=2, matching=2)
    # One commit of the generations table per generation, each validated and published
    # at the version the summary names; one Asset event per publication.
    from cdcgen.generation_lake.lake_tables import list_artifacts, read_artifact

    extracted = list_artifacts(scn.config.lake_path)
    assert sorted(a.generation.iso for a in extracted) == sorted(summary["lake_versions"])
    assert summary["lake_format"] == "delta"
    for latest in extracted:
        read = summary["lake_versions"][latest.generation.iso]
        validated = read_artifact(scn.config.lake_path, latest.generation, read["version"])
        assert validated.description_sha256 == read["description_sha256"]
        assert validated.files == latest.files  # what was validated is what is there
    events = scn.asset_events()
    assert len(events) == 2
    assert all(str(j.generation.id) in " ".join(events) for j in joined)
    for report in summary["reports"]:
        assert Path(report).name == "index.html" and Path(report).exists()
    # The ring: recorded at detection with the newest generation and checked against it
    # (system.topology); the older one was never the newest a run saw, which is said.
    first, newest = (iso(j) for j in joined)
    assert summary["ring_checks"] == "passed"
    assert summary["ring_checked"] == [newest] and summary["ring_unknown"] == [first]
    assert "the ring recorded with this generation (system.topology: 2 nodes" in run.output
    page = generation_page(scn, joined[1])
    assert "(unknown)" not in page and str(joined[1].node.host_id) in page
    # Listed and not skipped: a skipped check is also named, in the notes, "(needs ...)".
    assert all(check in page for check in RING_CHECKS_RAFT) and "(needs " not in page

    # A generation made for another ring than the nodes report (the shard count of the
    # first ring token's owner doubled): only the check against the ring can refute it;
    # it is rejected by name and not published, and those published before stay as they are.
    from cdcgen_dev.emulator import FaultKind, GenerationFault

    with scn.client() as client:
        stale = scn.cluster(client).join_node(
            SourceMode.RAFT, seed=3, faults=[GenerationFault(FaultKind.SHARD_COUNT_CHANGED, 0)]
        )
    again, summary = scn.run()
    assert not again.succeeded
    assert summary["generations_detected"] == 1
    assert summary["rejected"] == [iso(stale)] and summary["published"] == []
    assert summary["ring_checks"] == "failed"
    assert "FAILED stream count equals the owner's shard count" in again.output
    comparison = scn.compare()
    assert comparison.matching == 2 and comparison.unpublished == [iso(stale)]


RING_CHECKS_RAFT = (
    "entry count equals the ring&#x27;s vnode count",
    "range ends are ring tokens",
    "stream count equals the owner&#x27;s shard count",
)


def iso(joined: Any) -> str:
    return str(joined.generation.timestamp.isoformat(timespec="milliseconds"))


def generation_page(scn: Scenario, joined: Any) -> str:
    """The report site's page of a joined node's generation."""
    from cdcgen.reports.records import slug

    found = list(
        (scn.config.report_dir / "generations").glob(f"*{slug(joined.generation.id)}.html")
    )
    assert found, "no report page for the generation"
    return found[0].read_text()


def test_unreachable_node_fails_the_wait_naming_it(scenario: Callable[..., Scenario]) -> None:
    scn = scenario("down", SourceMode.RAFT)
    with scn.client() as client:
        cluster = scn.cluster(client)
        for seed in (11, 12):
            cluster.join_node(SourceMode.RAFT, seed=seed)
        cluster.set_node_up("node2", False)
    run, summary = scn.run(extra={"clock_wait_timeout_seconds": 5})
    assert not run.succeeded
    assert "node node2 unreachable" in run.output, run.tail(80)
    assert summary["generations_published"] == 0
    assert len(summary["not_validated"]) == 2
    assert scn.compare().published == 0


def test_corrupted_generation_is_not_published(scenario: Callable[..., Scenario]) -> None:
    from cdcgen_dev.emulator import FaultKind, GenerationFault

    # V1 lists keep the stored order, so the reader hands a duplicated stream through
    # and only the validation can stop it (raft/gossip readers already refuse it).
    scn = scenario("corrupt", SourceMode.V1)
    with scn.client() as client:
        cluster = scn.cluster(client)
        good = cluster.join_node(SourceMode.V1, seed=9)
        bad = cluster.join_node(
            SourceMode.V1, seed=10, faults=[GenerationFault(FaultKind.DUPLICATE_STREAM, 1)]
        )
    events = scn.config.report_dir.parent / "openlineage"  # the provider's file transport
    run, summary = scn.run(env=lineage_env(events))
    assert not run.succeeded, "a rejected generation must fail the run"
    assert "failed validation and will not be published" in run.output
    bad_ts = bad.generation.timestamp.isoformat(timespec="milliseconds")
    good_ts = good.generation.timestamp.isoformat(timespec="milliseconds")
    extract_and_publish_report_their_lineage(scn, events)
    # The failure ends with what it holds back and the Param that re-does it alone.
    assert (
        "Next: every newer generation waits behind it, unpublished." in run.output
        and f"with the Param generation_id={bad_ts} to extract" in run.output
    ), run.tail(80)
    # The grid names each mapped task by its generation, not by its index.
    assert rendered_map_indexes(scn.home, "cdc_generations") == {
        task: {good_ts, bad_ts}
        for task in ("generation.wait", "generation.extract", "generation.validate")
    }
    assert summary["generations_published"] == 1
    assert summary["validation"] == "failed"
    assert summary["rejected"] == [bad_ts]
    assert summary["published"] == [good_ts]
    comparison = scn.compare()
    assert comparison.matching == 1 and comparison.unpublished == [bad_ts]
    # The rejected generation's Data Docs say which expectations failed, on which streams.
    bad_ms = str(int(bad.generation.timestamp.timestamp() * 1000))
    docs = [Path(r) for r in summary["reports"] if bad_ms in r]
    assert docs and docs[0].exists(), summary["reports"]
    pages = [p for p in docs[0].parent.glob("validations/generation_format/**/*.html")]
    assert pages, "no Data Docs page for the format suite"
    text = re.sub(r"<[^>]+>", " ", pages[0].read_text())
    assert "Status: Failed" in " ".join(text.split())
    assert "No stream ID appears twice in the generation" in text
    # ... and the report site's page for it says it was not published, and links them.
    from cdcgen.reports.records import slug

    site = list((scn.config.report_dir / "generations").glob(f"*{slug(bad.generation.id)}.html"))
    assert site, "no report page for the rejected generation"
    assert "stream IDs unique" in site[0].read_text()


def test_extract_and_validation_on_the_spark_connect_server(
    scenario: Callable[..., Scenario], spark_connect: Any
) -> None:
    # The deployment with a long-lived Spark: no task starts a JVM of its own.
    scn = scenario("connect", SourceMode.RAFT)
    with scn.client() as client:
        joined = scn.cluster(client).join_node(SourceMode.RAFT, seed=21)
    env = {**spark_connect.client_env(), "CDCGEN_VALIDATION_ENGINE": "spark"}
    run, summary = scn.run(env=env)
    assert_ok(run)
    assert "Spark-Submit cmd" not in run.output
    assert "extracted on the Spark Connect server" in run.output
    assert "the generation-extract job runs on the Spark Connect server" in run.output
    assert "the validation job runs on the Spark Connect server" in run.output
    assert "rows flagged (spark engine)" in run.output
    assert summary["generations_published"] == 1 and summary["validation"] == "passed"
    assert summary["streams_published"] == joined.description.stream_count()
    assert scn.compare() == Comparison(published=1, matching=1)


def extract_and_publish_report_their_lineage(scn: Scenario, folder: Path) -> None:
    """Each generation's extract (a mapped task: its generation is known only when it
    runs) reads the source's V1 metadata tables (the scenario's prefixed copies, as read)
    into the lake's generations table; publish reads that table and writes the target
    keyspace's two description tables (for the generation that passed; the rejected one
    is held back). Every table of the cluster in the namespace of its first contact
    point, the lake's in ``file``. The tasks that read or write no table claim none: the
    collector is each task's own, though ``dags test`` runs them all in one process."""
    c = scn.config
    cluster = f"cassandra://{c.contact_points[0]}:{c.port}"
    lake = (FILE, f"{c.lake_path}/generations")
    metadata = {
        (cluster, f"{c.source_keyspace_prefix}system_distributed.cdc_generation_descriptions"),
        (cluster, f"{c.source_keyspace_prefix}system_distributed.cdc_streams_descriptions"),
    }
    tasks = finished_tasks(folder, "cdc_generations")
    extract = tasks["generation.extract"]
    assert sorted(extract.inputs) == [0, 1], extract
    assert all(extract.inputs[index] == metadata for index in (0, 1)), extract
    assert all(extract.outputs[index] == {lake} for index in (0, 1)), extract
    publish = tasks["publish"]
    assert publish.all_inputs() == {lake}
    assert publish.all_outputs() == {
        (cluster, f"{c.target_keyspace}.cdc_streams_descriptions_v2"),
        (cluster, f"{c.target_keyspace}.cdc_generation_timestamps"),
    }
    for quiet in ("detect", "generation.validate", "summarize"):
        assert quiet in tasks, sorted(tasks)
        assert not tasks[quiet].all_inputs() and not tasks[quiet].all_outputs(), quiet
