"""Airflow for the e2e tests: the project's Airflow home, set before anything imports airflow.

Importing ``airflow`` reads (and, if missing, writes) ``$AIRFLOW_HOME/airflow.cfg``;
without this a test run would create ``~/airflow``.  In-process tests (trigger,
sensor) only need the configuration; DAG parsing and ``airflow dags test`` run in
subprocesses against copies of a migrated home, so each run has its own SQLite DB.
"""

from __future__ import annotations

import os
import shutil
import sys
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path

import psutil
import pytest
from dag_scenarios import LOGS, RING_DELAY, Scenario

from cdcgen.core.generation import SourceMode
from cdcgen_dev.airflow_home import clone_home, migrate, write_config
from cdcgen_dev.paths import REPO_ROOT
from cdcgen_dev.provider_venv import ProviderVenv, provider_venv
from cdcgen_dev.sandbox import sandbox_config
from cdcgen_dev.spark_cluster import StandaloneCluster, standalone

#: A pristine home: migrated once, never run in (var/airflow is the developer's and the
#: demo's, with their runs and Asset events); each test runs in a copy of it.
TEMPLATE_HOME = REPO_ROOT / "var" / "airflow-e2e-template"
SPARK_ROOT = REPO_ROOT / "var" / "spark-standalone"

if "airflow" in sys.modules and "AIRFLOW_HOME" not in os.environ:
    warnings.warn(
        "airflow was imported before tests/e2e/conftest.py set AIRFLOW_HOME; in-process "
        "Airflow tests use whatever home it found",
        stacklevel=1,
    )
# Only the home: subprocesses get their full environment from airflow_env(), and other
# e2e suites (the full stack) must not inherit this home's config or connections.
os.environ.setdefault("AIRFLOW_HOME", str(TEMPLATE_HOME))
if Path(os.environ["AIRFLOW_HOME"]) == TEMPLATE_HOME:
    write_config(TEMPLATE_HOME)


@pytest.fixture(scope="session")
def airflow_template_home() -> Path:
    """A home with a migrated, empty metadata DB (about 10 s the first time)."""
    write_config(TEMPLATE_HOME)
    migrate(TEMPLATE_HOME)
    return TEMPLATE_HOME


@pytest.fixture
def airflow_home(airflow_template_home: Path, tmp_path: Path) -> Iterator[Path]:
    """A private copy of the migrated home: runs in one test cannot see another's."""
    yield clone_home(airflow_template_home, tmp_path / "airflow")


@pytest.fixture
def cassandra_points(request: pytest.FixtureRequest) -> tuple[tuple[str, ...], int]:
    """The sandbox's contact points, or ``$CDCGEN_E2E_CONTACT_POINTS`` (host[,host]) if set.

    The override lets a developer point these slow tests at a private Cassandra while
    other test sessions stop and start the shared sandbox.
    """
    override = os.environ.get("CDCGEN_E2E_CONTACT_POINTS")
    if override:
        return tuple(p.strip() for p in override.split(",") if p.strip()), 9042
    handle = request.getfixturevalue("cassandra_single")
    return tuple(handle.contact_points), handle.port


@pytest.fixture
def scenario(
    cassandra_points: tuple[tuple[str, ...], int], airflow_home: Path, tmp_path: Path
) -> Callable[[str, SourceMode], Scenario]:
    """Factory: a fresh emulated cluster under prefix ``e2e_<name>_`` (dropped first)."""
    contact_points, port = cassandra_points

    def make(name: str, mode: SourceMode) -> Scenario:
        from cdcgen.adapters.cql import client_for
        from cdcgen_dev.emulator.schema_setup import drop_keyspaces

        prefix = f"e2e_{name}_"
        config = sandbox_config(
            prefix,
            contact_points=contact_points,
            port=port,
            source_mode=mode,
            lake_path=tmp_path / "lake",
            report_dir=tmp_path / "reports",
            ring_delay=RING_DELAY,
        )
        with client_for(config) as client:
            drop_keyspaces(client, config.source_schema)
        shutil.rmtree(LOGS / name, ignore_errors=True)
        return Scenario(name, config, airflow_home)

    return make


@pytest.fixture(scope="session")
def spark_standalone() -> Iterator[StandaloneCluster]:
    """A Spark standalone master and two workers (1 core, 1g each) on 127.0.0.1, started
    once per session from the pinned pyspark and stopped at its end, failures included
    (about 10 s to start). Its workers do not see this process's PYTHONPATH or CDCGEN_*.
    Logs and executors' work directories stay in var/spark-standalone/session-<pid>/
    until a later session finds that pid gone."""
    for old in SPARK_ROOT.glob("session-*"):  # earlier sessions' (their pid is gone)
        if not psutil.pid_exists(int(old.name.removeprefix("session-"))):
            shutil.rmtree(old, ignore_errors=True)
    with standalone(SPARK_ROOT / f"session-{os.getpid()}", workers=2) as cluster:
        yield cluster


@pytest.fixture(scope="session")
def provider_virtualenv() -> ProviderVenv:
    """The provider installed from its wheel into a virtualenv of its own, built when what
    it is made of changed (:mod:`cdcgen_dev.provider_venv`; minutes the first time)."""
    return provider_venv()
