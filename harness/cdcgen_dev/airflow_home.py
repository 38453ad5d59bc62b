"""The local Airflow home used by development, the e2e tests and ``make demo``.

Creates ``var/airflow`` (ignored by git) with an ``airflow.cfg`` that points at
this repository's ``dags/`` (the report plugin comes with the installed provider, as in a
deployment), loads no examples, keeps the SQLite
metadata database and logs inside the home (Airflow's own ``{AIRFLOW_HOME}``
defaults, so a copied home is a working home) and needs no network.  The
connections are not stored in the database: :func:`airflow_env` defines them as
``AIRFLOW_CONN_*`` JSON environment variables, so each test run can point the DAG
at another source without touching shared state.

Run ``python -m cdcgen_dev.airflow_home`` (``make airflow-home``) to create or refresh
it; it prints how to use it.
"""

from __future__ import annotations

import argparse
import configparser
import io
import os
import secrets
import shlex
import shutil
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from cdcgen.adapters.files import write_atomic
from cdcgen.airflow.connections import (
    DEFAULT_SPARK_MASTER,
    SOURCE_CONN_ID,
    SPARK_CONN_ID,
    connection_env,
    source_connection,
    spark_connection,
)
from cdcgen_dev.isolation import isolated_env
from cdcgen_dev.locking import file_lock
from cdcgen_dev.paths import CHECKOUT_LAKE, CHECKOUT_REPORTS, REPO_ROOT

DEFAULT_HOME = REPO_ROOT / "var" / "airflow"
CONFIG_NAME = "airflow.cfg"
DB_NAME = "airflow.db"
_MIGRATED_STAMP = ".migrated"

# Settings this project decides.  Everything else keeps Airflow's default; the
# database URL, log folder etc. default to paths under {AIRFLOW_HOME}.
_SETTINGS: dict[str, dict[str, str]] = {
    "core": {
        "dags_folder": str(REPO_ROOT / "dags"),
        "load_examples": "False",
        "default_timezone": "utc",
        # Tasks run in-process under `airflow dags test`; keep a real run small too.
        "parallelism": "4",
        "max_active_tasks_per_dag": "4",
        "dags_are_paused_at_creation": "True",
        # Spark's JVM start and a GX import can exceed the 30 s default on 2 cores.
        "dagbag_import_timeout": "60",
        "dag_file_processor_timeout": "90",
    },
    "logging": {
        "logging_level": "INFO",
        "colored_console_log": "False",
    },
    "dag_processor": {
        # Tests and the demo create the home once; no periodic bundle refresh needed.
        "refresh_interval": "300",
    },
    "triggerer": {
        "default_capacity": "100",
    },
    "sensors": {
        # A sensor without its own timeout should not wait for a week.
        "default_timeout": "3600",
    },
}


def airflow_executable(python: Path | None = None) -> Path:
    """The ``airflow`` script next to ``python`` (default: this interpreter, the project's
    virtualenv)."""
    return Path(python or sys.executable).parent / "airflow"


def write_config(home: Path) -> Path:
    """(Re)write ``airflow.cfg`` in ``home``, keeping secrets that are already there.

    The Fernet key and JWT secret are generated once per home: the database may
    hold values encrypted with the first and the API server signs tokens with the
    second.
    """
    home.mkdir(parents=True, exist_ok=True)
    path = home / CONFIG_NAME
    parser = configparser.ConfigParser(interpolation=None)
    if path.exists():
        parser.read(path)
    fernet_key = parser.get("core", "fernet_key", fallback="") or _fernet_key()
    jwt_secret = parser.get("api_auth", "jwt_secret", fallback="") or secrets.token_urlsafe(32)
    out = configparser.ConfigParser(interpolation=None)
    for section, values in _SETTINGS.items():
        out[section] = dict(values)
    out["core"]["fernet_key"] = fernet_key
    out["api_auth"] = {"jwt_secret": jwt_secret}
    # It holds the secrets: readable by this user only, from its first byte. Written
    # whole, so that a concurrent session copying the home never reads it half-written.
    text = io.StringIO()
    text.write("# Written by cdcgen_dev.airflow_home; edits are overwritten.\n")
    out.write(text)
    write_atomic(path, text.getvalue(), mode=0o600)
    return path


def _fernet_key() -> str:
    from cryptography.fernet import Fernet

    return Fernet.generate_key().decode()


def airflow_env(
    home: Path = DEFAULT_HOME,
    *,
    source: Mapping[str, Any] | None = None,
    spark_master: str = DEFAULT_SPARK_MASTER,
    base: Mapping[str, str] | None = None,
    python: Path | None = None,
) -> dict[str, str]:
    """Environment for running ``airflow`` against ``home``.

    ``source`` is the JSON form of the ``cdc_source`` connection (see
    :func:`cdcgen.airflow.connections.source_connection`); the default points at
    the embedded sandbox on 127.0.0.1:9042.  The virtualenv's ``bin`` (``python``'s,
    default this interpreter's) goes first on ``PATH`` because SparkSubmitHook runs
    ``spark-submit`` by name, and Spark's Python workers use that interpreter so they can
    import ``cdcgen``. Unless ``base`` names them, the lake and the reports are the
    checkout's ``lake/`` and ``reports/``.
    """
    env = dict(os.environ if base is None else base)
    interpreter = str(python or sys.executable)
    bin_dir = str(Path(interpreter).parent)
    path = env.get("PATH", "")
    env.setdefault("CDCGEN_LAKE_PATH", str(CHECKOUT_LAKE))
    env.setdefault("CDCGEN_REPORT_DIR", str(CHECKOUT_REPORTS))
    env.update(
        {
            "AIRFLOW_HOME": str(home),
            "AIRFLOW_CONFIG": str(home / CONFIG_NAME),
            "PATH": bin_dir + (os.pathsep + path if path else ""),
            "PYSPARK_PYTHON": interpreter,
            "PYSPARK_DRIVER_PYTHON": interpreter,
            # Unit-test friendly: no colour codes in captured output.
            "NO_COLOR": "1",
        }
    )
    env.update(connection_env(SPARK_CONN_ID, spark_connection(spark_master)))
    env.update(connection_env(SOURCE_CONN_ID, source or source_connection()))
    return env


def migrate(home: Path, env: Mapping[str, str] | None = None, python: Path | None = None) -> None:
    """``airflow db migrate`` once per home and Airflow version (a stamp file records it),
    with the Airflow of ``python``'s virtualenv (default this interpreter's)."""
    from importlib.metadata import version

    stamp = home / _MIGRATED_STAMP
    want = version("apache-airflow-core") if python is None else _airflow_version(python)
    # Concurrent test sessions share the e2e template home: one migrates, the other waits.
    with file_lock(home / ".migrate.lock"):
        if stamp.exists() and stamp.read_text().strip() == want and (home / DB_NAME).exists():
            return
        result = subprocess.run(
            [str(airflow_executable(python)), "db", "migrate"],
            env=dict(env)
            if env is not None
            else airflow_env(home, python=python, base=None if python is None else isolated_env()),
            capture_output=True,
            text=True,
            check=False,
        )
        if result.returncode != 0:
            raise RuntimeError(
                f"`airflow db migrate` failed in {home} (exit {result.returncode}):\n"
                f"{result.stdout[-2000:]}\n{result.stderr[-4000:]}"
            )
        stamp.write_text(want + "\n")


def _airflow_version(python: Path) -> str:
    """The Airflow version another virtualenv's ``python`` has (its migrations are its own)."""
    script = "from importlib.metadata import version; print(version('apache-airflow-core'))"
    done = subprocess.run(
        [str(python), "-I", "-c", script],
        env=isolated_env(),
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout.strip()


def ensure_home(home: Path = DEFAULT_HOME) -> Path:
    """Create or refresh ``home``: config, migrated database, ``env.sh``."""
    write_config(home)
    migrate(home)
    write_env_file(home)
    return home


def clone_home(template: Path, dest: Path) -> Path:
    """A fresh home with a copy of ``template``'s migrated database (for isolated tests).

    Copying the SQLite file takes milliseconds; migrating a new one takes tens of seconds.
    """
    dest.mkdir(parents=True, exist_ok=True)
    for name in (CONFIG_NAME, DB_NAME, _MIGRATED_STAMP):
        shutil.copy2(template / name, dest / name)
    return dest


def write_env_file(home: Path, *, source: Mapping[str, Any] | None = None) -> Path:
    """``env.sh`` for a shell: ``source var/airflow/env.sh`` then ``airflow dags test ...``."""
    env = airflow_env(home, source=source, base={})
    env.pop("PATH")
    lines = [
        "# Written by cdcgen_dev.airflow_home: `source` it to use this Airflow home.",
        f'export PATH={shlex.quote(str(Path(sys.executable).parent))}:"$PATH"',
        *(f"export {key}={shlex.quote(value)}" for key, value in sorted(env.items())),
    ]
    path = home / "env.sh"
    path.write_text("\n".join(lines) + "\n")
    return path


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m cdcgen_dev.airflow_home",
        description="Create or refresh the local Airflow home (config, SQLite DB, env.sh).",
    )
    parser.add_argument("--home", type=Path, default=DEFAULT_HOME)
    args = parser.parse_args(argv)
    home = ensure_home(args.home.resolve())
    print(f"Airflow home ready: {home}")
    print(f"  source {home / 'env.sh'}")
    print("  airflow dags test cdc_generations")
    return 0


if __name__ == "__main__":
    sys.exit(main())
