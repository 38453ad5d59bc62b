"""The whole Airflow 3 deployment on this machine: PostgreSQL + api-server, scheduler,
dag-processor and triggerer, as background processes with logs under ``var/fullstack``.

What ``airflow standalone`` would do, but with the production split of components
and a real PostgreSQL metadata database, so the full-stack test exercises what
docker-compose runs: the REST API, the scheduler's (preloading) LocalExecutor going through the
Execution API, the DAG processor parsing bundles, the triggerer running deferred
sensors.  Sized for two cores: one API worker, parallelism 4.

Use ``python -m cdcgen_dev.devstack up|down|status`` (``scripts/fullstack.sh``) or
:class:`AirflowStack` from tests.
"""

from __future__ import annotations

import json
import secrets
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cdcgen_dev.devstack.packages import pg_driver_problem
from cdcgen_dev.devstack.postgres import Postgres, reachable_base
from cdcgen_dev.devstack.processes import Managed, StackError, run
from cdcgen_dev.devstack.rest import AirflowApi
from cdcgen_dev.paths import REPO_ROOT

COMPONENTS = ("api-server", "scheduler", "dag-processor", "triggerer")
#: Health sections of /api/v2/monitor/health that must all be "healthy".
HEALTH_SECTIONS = ("metadatabase", "scheduler", "triggerer", "dag_processor")
DEFAULT_BASE = REPO_ROOT / "var" / "fullstack"


@dataclass(frozen=True)
class StackSettings:
    base: Path = DEFAULT_BASE
    api_port: int = 28080
    pg_port: int = 55432
    dags_folder: Path = REPO_ROOT / "dags"
    #: JSON form of the ``cdc_source`` connection (default: the sandbox on 127.0.0.1).
    source: Mapping[str, Any] | None = None
    spark_master: str = "local[2]"
    parallelism: int = 4
    extra_env: Mapping[str, str] = field(default_factory=dict)


class AirflowStack:
    def __init__(self, settings: StackSettings | None = None) -> None:
        self.settings = settings or StackSettings()
        base = self.settings.base
        self.home = base / "airflow"
        self.lake = base / "lake"
        self.reports = base / "reports"
        self.postgres = Postgres(reachable_base(base / "postgres"), self.settings.pg_port)
        self.components = {
            name: Managed(name, base / "pids" / f"{name}.pid", base / "logs" / f"{name}.log")
            for name in COMPONENTS
        }

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.settings.api_port}"

    def api(self) -> AirflowApi:
        return AirflowApi(self.base_url)

    # --- configuration ----------------------------------------------------------------

    def _secrets(self) -> dict[str, str]:
        """Secrets every component must share (kept for the life of ``base``)."""
        path = self.settings.base / "secrets.json"
        if path.exists():
            loaded: dict[str, str] = json.loads(path.read_text())
            return loaded
        from cryptography.fernet import Fernet

        values = {
            "fernet_key": Fernet.generate_key().decode(),
            "jwt_secret": secrets.token_urlsafe(32),
            "api_secret_key": secrets.token_urlsafe(32),
        }
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(values))
        path.chmod(0o600)
        return values

    def env(self) -> dict[str, str]:
        """Environment of every component (and so of every task they run)."""
        from cdcgen_dev.airflow_home import airflow_env, write_config

        write_config(self.home)
        keys = self._secrets()
        port = self.settings.api_port
        env = airflow_env(
            self.home, source=self.settings.source, spark_master=self.settings.spark_master
        )
        env.update(
            {
                "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": self.postgres.url,
                "AIRFLOW__CORE__EXECUTOR": "cdcgen.airflow.executor.PreloadingLocalExecutor",
                "AIRFLOW__CORE__DAGS_FOLDER": str(self.settings.dags_folder),
                "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
                "AIRFLOW__CORE__PARALLELISM": str(self.settings.parallelism),
                "AIRFLOW__CORE__MAX_ACTIVE_TASKS_PER_DAG": str(self.settings.parallelism),
                "AIRFLOW__CORE__FERNET_KEY": keys["fernet_key"],
                "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_ALL_ADMINS": "True",
                "AIRFLOW__CORE__EXECUTION_API_SERVER_URL": f"http://127.0.0.1:{port}/execution/",
                "AIRFLOW__API__HOST": "127.0.0.1",
                "AIRFLOW__API__PORT": str(port),
                "AIRFLOW__API__WORKERS": "1",
                "AIRFLOW__API__BASE_URL": f"http://127.0.0.1:{port}",
                "AIRFLOW__API__SECRET_KEY": keys["api_secret_key"],
                "AIRFLOW__API_AUTH__JWT_SECRET": keys["jwt_secret"],
                # Pick up new DAG files quickly; re-parse a changed file within seconds.
                "AIRFLOW__DAG_PROCESSOR__REFRESH_INTERVAL": "5",
                "AIRFLOW__DAG_PROCESSOR__MIN_FILE_PROCESS_INTERVAL": "10",
                "AIRFLOW__SCHEDULER__SCHEDULER_IDLE_SLEEP_TIME": "1",
                # Off the defaults, so a stack elsewhere on the machine does not collide.
                "AIRFLOW__LOGGING__WORKER_LOG_SERVER_PORT": str(port + 1),
                "AIRFLOW__LOGGING__TRIGGER_LOG_SERVER_PORT": str(port + 2),
                "AIRFLOW__SCHEDULER__SCHEDULER_HEALTH_CHECK_SERVER_PORT": str(port + 3),
                "CDCGEN_LAKE_PATH": str(self.lake),
                "CDCGEN_REPORT_DIR": str(self.reports),
            }
        )
        env.update(self.settings.extra_env)
        return env

    def airflow(self, *args: str, timeout: float = 600) -> str:
        return run([str(Path(sys.executable).parent / "airflow"), *args], self.env(), timeout)

    # --- lifecycle --------------------------------------------------------------------

    def up(self, timeout: float = 420.0) -> None:
        """Start everything that is not running and wait until the API reports all healthy."""
        problem = pg_driver_problem()
        if problem:
            raise StackError(problem)
        started = time.monotonic()
        self.postgres.start()
        self.migrate()
        env = self.env()
        airflow = str(Path(sys.executable).parent / "airflow")
        for name, component in self.components.items():
            if not component.running():
                component.start([airflow, name], env, cwd=self.settings.base)
        self.wait_healthy(timeout - (time.monotonic() - started))

    def migrate(self) -> None:
        """``airflow db migrate`` once per database and Airflow version."""
        from importlib.metadata import version

        stamp = self.settings.base / "migrated"
        want = f"{version('apache-airflow-core')} {self.postgres.url}"
        if stamp.exists() and stamp.read_text() == want:
            return
        self.airflow("db", "migrate")
        stamp.write_text(want)

    def wait_healthy(self, timeout: float) -> dict[str, Any]:
        api = self.api()
        deadline = time.monotonic() + timeout
        last: Any = "no answer"
        while True:
            for name, component in self.components.items():
                if not component.running():
                    raise StackError(f"{name} exited:\n{component.tail()}")
            try:
                health = api.health()
                last = health
                if all(
                    (health.get(section) or {}).get("status") == "healthy"
                    for section in HEALTH_SECTIONS
                ):
                    return health
            except StackError as exc:
                last = str(exc)
            if time.monotonic() > deadline:
                logs = "\n".join(f"--- {n}\n{c.tail(15)}" for n, c in self.components.items())
                raise StackError(f"Airflow not healthy after {timeout:.0f} s: {last}\n{logs}")
            time.sleep(2)

    def down(self) -> list[str]:
        """Stop every component and PostgreSQL; returns what was running."""
        stopped = [name for name, c in reversed(self.components.items()) if c.stop()]
        if self.postgres.stop():
            stopped.append("postgres")
        return stopped

    def status(self) -> dict[str, Any]:
        state: dict[str, Any] = {n: c.pid() for n, c in self.components.items()}
        state["postgres"] = self.postgres.running()
        try:
            state["health"] = self.api().health()
        except StackError as exc:
            state["health"] = str(exc)
        return state
