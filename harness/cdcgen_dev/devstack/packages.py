"""Debian packages the full stack needs: PostgreSQL (metadata DB) and Chromium (screenshots).

Installed on demand, idempotently, with apt (the machine and CI run as root);
the same stamp as ``scripts/setup.sh`` keeps ``apt-get update`` to once per machine.
"""

from __future__ import annotations

import glob
import os
import subprocess
from pathlib import Path

from cdcgen_dev.devstack.processes import StackError

_APT_STAMP = Path("/var/lib/apt/periodic/cdcgen-updated")
CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")


def apt_install(*packages: str) -> None:
    if os.geteuid() != 0:
        raise StackError(f"need root to install {' '.join(packages)} with apt-get; install them")
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    if not _APT_STAMP.exists():
        subprocess.run(["apt-get", "update", "-qq"], check=True, env=env, capture_output=True)
        _APT_STAMP.parent.mkdir(parents=True, exist_ok=True)
        _APT_STAMP.touch()
    result = subprocess.run(
        ["apt-get", "install", "-y", "-qq", "--no-install-recommends", *packages],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    if result.returncode != 0:
        raise StackError(f"apt-get install {' '.join(packages)} failed:\n{result.stderr[-3000:]}")


def postgres_bin_dir() -> Path:
    """The newest installed PostgreSQL server's bin dir, installing Debian's if none is."""
    for attempt in range(2):
        found = sorted(
            glob.glob("/usr/lib/postgresql/*/bin/initdb"),
            key=lambda p: int(Path(p).parts[-3]) if Path(p).parts[-3].isdigit() else 0,
        )
        if found:
            return Path(found[-1]).parent
        if attempt == 0:
            apt_install("postgresql")
    raise StackError("PostgreSQL's initdb not found after installing postgresql")


def chromium() -> tuple[Path, Path]:
    """Debian's Chromium and ChromeDriver (installed on first use)."""
    if not (CHROMIUM.exists() and CHROMEDRIVER.exists()):
        apt_install("chromium", "chromium-driver", "fonts-dejavu-core")
    if not (CHROMIUM.exists() and CHROMEDRIVER.exists()):
        raise StackError("chromium / chromedriver missing after installing them")
    return CHROMIUM, CHROMEDRIVER


def pg_driver_problem() -> str | None:
    """Why Airflow cannot talk to PostgreSQL from this interpreter, or None."""
    missing = [m for m in ("psycopg2", "asyncpg") if not _importable(m)]
    if not missing:
        return None
    return (
        f"{', '.join(missing)} missing from the virtualenv: Airflow's metadata DB on PostgreSQL "
        "needs psycopg2 (sync) and asyncpg (async). They belong in pyproject's 'stack' extra: "
        '"psycopg2-binary==2.9.13", "asyncpg==0.32.0" (then make setup).'
    )


def _importable(module: str) -> bool:
    from importlib.util import find_spec

    return find_spec(module) is not None
