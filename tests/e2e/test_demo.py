"""``python -m cdcgen_dev.demo --mode M`` end to end, in every source mode.

The demo is run as a person runs it (``make demo MODE=M``): a subprocess on the
sandbox, real ``airflow dags test`` runs, Spark and GX. Its last line must be one JSON
object with today's summary keys plus ``source_mode`` and ``cdc_table``, report
success, publish what a reader in that mode can find, extract every change into the
lake, replicate to a sink in raft mode (``make demo``'s), and leave no process of its own
behind. ``--wait`` queues the test behind
a demo a developer may be running.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import psutil
import pytest

from cdcgen.core.generation import SourceMode
from cdcgen_dev.demo.steps import DEMO_DIR
from cdcgen_dev.paths import REPO_ROOT
from cdcgen_dev.provider_venv import ProviderVenv

pytestmark = [pytest.mark.e2e, pytest.mark.integration, pytest.mark.timeout(3600)]

#: The keys ``make demo`` printed before it had modes; they must all stay.
SUMMARY_KEYS = {
    "generations_published",
    "streams_published",
    "validation",
    "ring_checks",
    "report",
    "changes_rows",
    "colocation",
    "data_docs",
    "generations_matching_source",
    "sensor_deferrals",
    "row_checks",
    "changes_matching_source",
    "lake_format",
    "generation_lake_versions",
    "lake_versions",
    "lake_version",
    "watermark",
    "workload_writes",
    "target_keyspace",
    "lake",
    "seconds",
    "status",
}


def _processes_with(variable: str, value: str) -> list[psutil.Process]:
    """Live processes whose environment has ``variable=value``: whatever the demo started
    inherited it, whichever session or parent it ended up in."""
    found = []
    for process in psutil.process_iter():
        try:
            if process.environ().get(variable) == value:
                found.append(process)
        except (psutil.Error, OSError):
            continue
    return found


@pytest.mark.parametrize("mode", list(SourceMode))
def test_demo_runs_end_to_end(
    mode: SourceMode, cassandra_any: Any, request: pytest.FixtureRequest
) -> None:
    """``cassandra_any`` leases the sandbox first, so the demo starts no Cassandra of its own
    and every process carrying its marker afterwards is a leftover.

    The raft case, the one that runs all three DAGs, runs them with the Airflow of the
    provider's own virtualenv (the wheel, :mod:`cdcgen_dev.provider_venv`): the three DAGs
    from an installed provider against the sandbox. The other modes run ``make demo``'s
    Airflow, the checkout's."""
    marker = uuid.uuid4().hex
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path), "CDCGEN_DEMO_RUN": marker}
    env.pop("AIRFLOW_HOME", None)  # the demo uses its own home (var/airflow)
    command = [sys.executable, "-m", "cdcgen_dev.demo", "--mode", str(mode), "--wait"]
    provider: ProviderVenv | None = None
    if mode is SourceMode.RAFT:
        provider = request.getfixturevalue("provider_virtualenv")
        command += ["--airflow-python", str(provider.python)]
    done = subprocess.run(
        command,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=env,
        timeout=3300,
        check=False,
    )
    lines = done.stdout.strip().splitlines()
    assert done.returncode == 0, "\n".join(lines[-60:])
    summary = json.loads(lines[-1])
    assert summary["status"] == "ok"
    assert set(summary) >= SUMMARY_KEYS
    assert summary["source_mode"] == str(mode)
    assert summary["cdc_table"] == "demo_shop.orders"
    assert summary["generations_published"] == summary["generations_expected"] > 0
    assert summary["generations_matching_source"] == summary["generations_expected"]
    assert summary["validation"] == "passed" and summary["colocation"] == "passed"
    assert summary["changes_rows"] > 0 and summary["changes_matching_source"] is True
    if mode is SourceMode.RAFT:  # make demo's: replicated, bootstrapped before part of
        # the workload, compared by reading both tables
        assert summary["sink_table"] == "demo_shop_replica.orders"
        assert summary["replicated_rows"] > 0 and summary["sink_matches_source"] is True
        assert summary["bootstrap_copied_rows"] > 0
        assert summary["writes_after_bootstrap"] > 0 and summary["switch_after_bootstrap"]
        assert summary["applied_log_rows"] > 0
        operations = set(summary["applied_operations"])
        assert {"insert", "update", "row_delete", "partition_delete"} <= operations, operations
        assert operations & {"range_delete_start_inclusive", "range_delete_start_exclusive"}
    else:  # the replication reads the lake and the base table, the same in every mode
        assert summary["replication"].startswith("in raft mode only")
        assert "sink_table" not in summary
    # The changes table is Delta: the run's commits, the last one the table's version.
    assert summary["lake_format"] == "delta"
    assert len(summary["generation_lake_versions"]) == summary["generations_published"]
    assert summary["lake_versions"] and summary["lake_versions"][-1] == summary["lake_version"]
    # The checks against the ring ran (tablets stream sets have none), and the newest
    # generation's page shows the ring's node owners.
    tablets = mode is SourceMode.TABLETS
    assert summary["ring_checks"] == ("not applicable" if tablets else "passed")
    pages = [p.read_text() for p in (Path(summary["report"]).parent / "generations").glob("*.html")]
    owners_shown = [p for p in pages if "No ring was recorded" not in p and "(unknown)" not in p]
    assert pages and (tablets or owners_shown)
    if mode is SourceMode.GOSSIP:
        assert summary["generations_expected"] == 1 < summary["generations_emulated"]
        # Its ring has no shard counts: each node's ranges are checked for agreement.
        assert any("a node&#x27;s ranges hold equally many streams" in p for p in pages)
    if mode is SourceMode.V1:  # published from the V1 tables, rewritten, then from V2
        assert summary["before_rewrite"]["generations_published"] == 2
        assert summary["generations_published"] == 2
    if tablets:  # the table's first stream set (4 tablets), then every tablet split
        assert summary["generations_published"] == 2
        assert summary["streams_published"] == 4 + 8
    if provider is not None:  # the provider's Airflow ran the DAGs, the jobs its package's
        assert f"(Airflow of {provider.root})" in done.stdout
        (jobs,) = provider.root.glob("lib/python3*/site-packages/cdcgen/jobs")
        for dag, job in (
            ("cdc_generations", "extract_generation"),
            ("cdc_changes", "extract_changes"),
        ):
            log = (DEMO_DIR / f"airflow-dags-test-{dag}.log").read_text()
            assert f"{jobs / job}.py" in log, dag
            assert str(REPO_ROOT / "plugins") not in log, dag
    leftovers = _processes_with("CDCGEN_DEMO_RUN", marker)
    assert leftovers == [], f"the demo left {leftovers} running"
