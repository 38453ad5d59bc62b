"""The whole deployment, for real: Airflow 3's api-server, scheduler, dag-processor and
triggerer on PostgreSQL, running ``cdc_generations`` against the Cassandra sandbox.

The sandbox emulates a raft-mode ScyllaDB cluster whose three nodes joined an hour
ago, ten minutes apart (three generations).  Through the REST API the test triggers
a run scoped to the first generation and creates a backfill over the second one's
interval; unpausing the DAG also lets the scheduler make its own run.  Every run
must succeed, the published tables must match the source, and the pages a person
looks at must show what they should: the DAG's grid, the report index and a
generation's summary (headings, the ring picture), checked in headless Chromium's
DOM and in the screenshots' pixels.  Screenshots stay in var/fullstack-e2e/screenshots.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from cdcgen.config import PipelineConfig
from cdcgen.core.generation import SourceMode
from cdcgen_dev.paths import REPO_ROOT
from cdcgen_dev.sandbox import sandbox_config

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.integration,
    pytest.mark.timeout(3600),
]

DAG_ID = "cdc_generations"
PREFIX = "fullstack_"
BASE = REPO_ROOT / "var" / "fullstack-e2e"
SHOTS = BASE / "screenshots"
# Off the dev stack's ports (scripts/fullstack.sh uses 28080 and 55432).
API_PORT = 28180
PG_PORT = 55532
RUNS_TIMEOUT = 1800.0


@dataclass(frozen=True)
class Seeded:
    config: PipelineConfig
    #: (timestamp, id) of each emulated generation, oldest first.
    generations: list[tuple[datetime, str]]


@dataclass
class Runs:
    manual: str
    backfill: list[str]
    states: dict[str, str]


def _floor_10min(moment: datetime) -> datetime:
    return moment.replace(minute=moment.minute - moment.minute % 10, second=0, microsecond=0)


@pytest.fixture(scope="module")
def cassandra_points(request: pytest.FixtureRequest) -> tuple[str, ...]:
    """The sandbox already running (either topology: never stop someone else's), or one node."""
    from cdcgen_dev.cassandra import Sandbox, running_topology

    running = running_topology()
    if running is not None:
        result = Sandbox(3 if running == "cluster" else 1).up()  # waits until it answers
        return tuple(result.contact_points)
    return tuple(request.getfixturevalue("cassandra_single").contact_points)


@pytest.fixture(scope="module")
def seeded(cassandra_points: tuple[str, ...]) -> Seeded:
    """A fresh emulated cluster under its own prefix: three joins, ten minutes apart."""
    from cdcgen.adapters.cql import client_for
    from cdcgen_dev.emulator import SandboxCluster
    from cdcgen_dev.emulator.schema_setup import drop_keyspaces

    config = sandbox_config(
        PREFIX,
        contact_points=cassandra_points,
        source_mode=SourceMode.RAFT,
        ring_delay=timedelta(seconds=1),
        lake_path=BASE / "lake",
        report_dir=BASE / "reports",
    )
    first = _floor_10min(datetime.now(UTC)) - timedelta(minutes=59)
    generations = []
    with client_for(config) as client:
        drop_keyspaces(client, config.source_schema)
        cluster = SandboxCluster.from_config(client, config)
        for i in range(3):
            joined = cluster.join_node(
                SourceMode.RAFT, seed=100 + i, vnodes=8, now=first + timedelta(minutes=10 * i)
            )
            assert joined.generation is not None
            generations.append((joined.generation.timestamp, str(joined.generation.id)))
    return Seeded(config, generations)


@pytest.fixture(scope="module")
def stack(seeded: Seeded) -> Iterator[Any]:
    """Airflow on a fresh PostgreSQL database; everything stopped afterwards."""
    from cdcgen.airflow.connections import source_connection_for
    from cdcgen_dev.devstack.stack import AirflowStack, StackSettings

    config = seeded.config
    settings = StackSettings(
        base=BASE,
        api_port=API_PORT,
        pg_port=PG_PORT,
        parallelism=2,  # two cores: at most two Spark/GX JVMs at a time
        source=source_connection_for(config),
        extra_env={
            "CDCGEN_TARGET_KEYSPACE": config.target_keyspace,
            "CDCGEN_RING_DELAY_SECONDS": str(config.ring_delay.total_seconds()),
        },
    )
    airflow = AirflowStack(settings)
    airflow.down()  # a stack a crashed session left behind
    shutil.rmtree(BASE, ignore_errors=True)
    shutil.rmtree(airflow.postgres.base, ignore_errors=True)
    try:
        airflow.up()
        yield airflow
    finally:
        airflow.down()


def _settle(api: Any, deadline: float) -> dict[str, str]:
    """Wait until every run of the DAG is finished and no new one appeared meanwhile
    (unpausing lets the scheduler create runs of its own)."""
    states: dict[str, str] = {}
    while True:
        time.sleep(10)
        every = {r["dag_run_id"] for r in api.runs(DAG_ID)}
        if every == set(states):
            return states
        states = api.wait_for_runs(DAG_ID, every, timeout=max(60.0, deadline - time.monotonic()))


@pytest.fixture(scope="module")
def runs(stack: Any, seeded: Seeded) -> Runs:
    """A manual run (first generation, forced), then a backfill of the second one's interval.

    One after the other, so that at most one run's Spark and GX jobs share the two cores.
    """
    from cdcgen.core.time import to_millis

    api = stack.api()
    deadline = time.monotonic() + RUNS_TIMEOUT
    api.wait_for_dag(DAG_ID, timeout=300)
    (g1, _), (g2, _), _ = seeded.generations
    manual = api.trigger(DAG_ID, {"generation_id": str(to_millis(g1)), "force": True})
    api.unpause(DAG_ID)
    _settle(api, deadline)
    interval = _floor_10min(g2)
    backfill = api.backfill(DAG_ID, interval, interval)
    backfill_runs = [r["dag_run_id"] for r in api.runs(DAG_ID) if r["run_type"] == "backfill"]
    assert backfill_runs, f"backfill {backfill['id']} created no run"
    states = _settle(api, deadline)
    return Runs(manual["dag_run_id"], backfill_runs, states)


def _failed_tasks(api: Any, run_id: str) -> list[str]:
    """Each unsuccessful task, and the end of the log of those that failed themselves."""
    lines = []
    for ti in api.task_instances(DAG_ID, run_id):
        if ti["state"] == "success":
            continue
        lines.append(f"{ti['task_id']}[{ti['map_index']}]: {ti['state']}")
        if ti["state"] == "failed":
            try:
                log = api.task_log(DAG_ID, run_id, ti["task_id"], ti["map_index"])
                lines.append("    " + "\n    ".join(log.splitlines()[-25:]))
            except Exception as exc:  # diagnostics only: never hide the real failure
                lines.append(f"    (log unavailable: {exc})")
    return lines


def test_runs_triggered_and_backfilled_through_the_rest_api_succeed(stack: Any, runs: Runs) -> None:
    api = stack.api()
    failed = {r: _failed_tasks(api, r) for r, s in runs.states.items() if s != "success"}
    report = "\n".join(f"{run}:\n" + "\n".join(lines) for run, lines in failed.items())
    assert not failed, f"runs failed (logs under {stack.home / 'logs'}):\n{report}"
    assert runs.manual in runs.states
    assert len(runs.backfill) == 1


def test_validation_found_great_expectations_imported_by_the_executor(
    stack: Any, runs: Runs
) -> None:
    """The scheduler's PreloadingLocalExecutor imported GX before forking: no task did."""
    api = stack.api()
    scheduler_log = (stack.settings.base / "logs" / "scheduler.log").read_text(errors="replace")
    assert "Imported the generation tasks' modules in" in scheduler_log
    validations = [
        ti
        for ti in api.task_instances(DAG_ID, runs.manual)
        if ti["task_id"] == "generation.validate"
    ]
    assert validations, "the manual run has no validate task"
    for ti in validations:
        log = api.task_log(DAG_ID, runs.manual, ti["task_id"], ti["map_index"])
        assert "Great Expectations was imported before this process started validating" in log


def test_each_run_published_what_it_was_asked_to(stack: Any, runs: Runs, seeded: Seeded) -> None:
    api = stack.api()
    (g1, _), (g2, _), _ = seeded.generations

    def iso(moment: datetime) -> str:
        return moment.astimezone(UTC).isoformat(timespec="milliseconds")

    manual = api.xcom(DAG_ID, runs.manual, "summarize")
    assert manual["published"] == [iso(g1)], manual
    backfill = api.xcom(DAG_ID, runs.backfill[0], "summarize")
    assert iso(g2) in backfill["published"], backfill


def test_published_tables_match_the_source(runs: Runs, seeded: Seeded) -> None:
    from cdcgen.adapters.readback import compare_with_source

    comparison = compare_with_source(seeded.config)
    assert comparison.mismatches == []
    assert comparison.unpublished == []
    assert comparison.published == comparison.matching == 3


def _generation_record(seeded: Seeded, run_id: str) -> Any:
    from cdcgen.reports.records import GenerationReport
    from cdcgen.reports.site import load_records

    records, problems = load_records(seeded.config.report_dir)
    assert problems == []
    mine = [r for r in records if isinstance(r, GenerationReport) and r.run_id == run_id]
    assert mine, f"no report record for {run_id} in {seeded.config.report_dir}"
    return mine[0]


def _assert_rendered(path: Path, min_colours: int = 8) -> None:
    from cdcgen_dev.devstack.png import pixel_stats

    stats = pixel_stats(path)
    assert stats.looks_rendered(min_colours=min_colours), f"{path} looks blank: {stats}"


def test_pages_render_in_a_browser(stack: Any, runs: Runs, seeded: Seeded) -> None:
    from cdcgen.reports.records import generation_page_name
    from cdcgen_dev.devstack.browser import Browser

    record = _generation_record(seeded, runs.manual)
    assert record.published and record.ring
    page = f"{stack.base_url}/cdcgen-reports/generations/{generation_page_name(record)}"
    shutil.rmtree(SHOTS, ignore_errors=True)
    with Browser(BASE / "browser", width=1500, height=1100) as browser:
        # The DAG's grid: one column per run, one row per task, all green.
        browser.open(f"{stack.base_url}/dags/{DAG_ID}")
        browser.wait_for_text([DAG_ID, "detect", "summarize"], timeout=120)
        cells = browser.wait_for_count(f'[data-testid^="grid-{runs.manual}-"]', 2, timeout=120)
        assert browser.count('[data-testid^="grid-"]') >= cells * len(runs.states) // 2
        _assert_rendered(browser.screenshot(SHOTS / "grid.png"))

        # The report index, served by the plugin inside the API server.
        browser.open(f"{stack.base_url}/cdcgen-reports/")
        browser.wait_for_text(["cdcgen runs", "Every run", runs.manual], timeout=60)
        _assert_rendered(browser.screenshot(SHOTS / "report-index.png"))

        # One generation's summary: counts, expectations, the ring, distributions.
        browser.open(page)
        text = browser.wait_for_text(
            ["Counts", "Expectations", "Ring", "Distributions", "expectations passed"],
            timeout=60,
        )
        counts = record.resolved_counts()
        assert f"{counts.entries}\nentries (ranges)".upper() in text.upper()
        assert browser.count("svg.ring path.range") == counts.entries
        assert browser.count("svg.ring circle.stream") == counts.streams
        assert browser.count("svg.histogram rect.bar") > 0
        assert browser.count("span.badge.pass") == record.expectations_passed
        _assert_rendered(browser.full_page_screenshot(SHOTS / "generation.png"), min_colours=20)

        # The same site inside the Airflow UI (Browse > CDC reports, an iframe).
        browser.open(f"{stack.base_url}/plugin/cdcgen-reports")
        browser.wait_for_text(["cdcgen runs", "Every run"], timeout=90, frames=True)
        _assert_rendered(browser.screenshot(SHOTS / "airflow-reports-view.png"))


def test_a_new_generation_is_published_by_the_watcher_s_event_within_seconds(
    stack: Any, runs: Runs, seeded: Seeded, record_property: Any
) -> None:
    """A node joins now: the watcher's event, not the cron schedule, starts the run that
    publishes its generation (last: it adds a fourth generation to the cluster)."""
    from cdcgen_dev.devstack.freshness import ASSET_TRIGGERED, measure, quiet

    api = stack.api()
    quiet(api, DAG_ID)  # no run going, no cron tick in the next minutes to race the watcher
    figures = measure(api, seeded.config, DAG_ID, seed=200, timeout=600)
    print(f"freshness: {figures.to_json()}")
    for name, value in figures.to_json().items():
        record_property(name, value)
    assert figures.run_type == ASSET_TRIGGERED, figures
    assert figures.commit_to_run < 60, figures  # seconds: the watcher polls every 5
    state = api.wait_for_runs(DAG_ID, [figures.run_id], timeout=600)[figures.run_id]
    assert state == "success", _failed_tasks(api, figures.run_id)
    published = api.xcom(DAG_ID, figures.run_id, "summarize")["published"]
    assert datetime.fromisoformat(figures.timestamp).isoformat(timespec="milliseconds") in [
        datetime.fromisoformat(p).isoformat(timespec="milliseconds") for p in published
    ], published
