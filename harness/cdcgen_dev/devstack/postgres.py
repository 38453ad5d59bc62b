"""A private PostgreSQL cluster for Airflow's metadata database, on a loopback port.

Debian's server binaries, our own data directory (not the system cluster, whose
port 5432 and config we leave alone), trust authentication on 127.0.0.1 only,
fsync off: a throw-away test database.  PostgreSQL refuses to run as root, so as
root the cluster runs as the ``postgres`` system user the package creates.
"""

from __future__ import annotations

import hashlib
import os
import pwd
import shutil
import socket
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from cdcgen_dev.devstack.packages import postgres_bin_dir
from cdcgen_dev.devstack.processes import StackError, run

DB_USER = "airflow"
DB_NAME = "airflow"
SERVICE_USER = "postgres"


@dataclass(frozen=True)
class Postgres:
    """The cluster in ``base`` (data, socket, log), serving 127.0.0.1:``port``."""

    base: Path
    port: int = 55432

    def __post_init__(self) -> None:
        # pg_ctl runs as another user from another directory: paths must be absolute.
        object.__setattr__(self, "base", Path(self.base).absolute())

    @property
    def data_dir(self) -> Path:
        return self.base / "data"

    @property
    def log_file(self) -> Path:
        return self.base / "postgres.log"

    @property
    def url(self) -> str:
        """SQLAlchemy URL of the Airflow database (psycopg2 driver)."""
        return f"postgresql+psycopg2://{DB_USER}@127.0.0.1:{self.port}/{DB_NAME}"

    # --- running as the right user -----------------------------------------------------

    def _as_owner(self, argv: list[str]) -> list[str]:
        if os.geteuid() != 0:
            return argv
        return ["runuser", "-u", SERVICE_USER, "--", *argv]

    def _chown(self, path: Path) -> None:
        if os.geteuid() == 0:
            entry = pwd.getpwnam(SERVICE_USER)
            for item in (path, *path.rglob("*")):
                os.chown(item, entry.pw_uid, entry.pw_gid)

    # --- lifecycle ---------------------------------------------------------------------

    def running(self) -> bool:
        pid_file = self.data_dir / "postmaster.pid"
        return pid_file.exists() and _port_open(self.port)

    def init(self) -> None:
        """``initdb`` once (a cluster that exists is kept)."""
        if (self.data_dir / "PG_VERSION").exists():
            return
        bin_dir = postgres_bin_dir()
        self.base.mkdir(parents=True, exist_ok=True)
        self._chown(self.base)
        run(
            self._as_owner(
                [
                    str(bin_dir / "initdb"),
                    "-D",
                    str(self.data_dir),
                    "-U",
                    "postgres",
                    "--auth=trust",
                    "--encoding=UTF8",
                    "--locale=C",
                ]
            )
        )

    def start(self, timeout: float = 60.0) -> None:
        if self.running():
            return
        if _port_open(self.port):
            raise StackError(f"port {self.port} is taken by something else; pick another")
        self.init()
        options = " ".join(
            [
                f"-p {self.port}",
                "-c listen_addresses=127.0.0.1",
                f"-c unix_socket_directories={self.data_dir}",
                "-c fsync=off",
                "-c synchronous_commit=off",
                "-c full_page_writes=off",
                "-c shared_buffers=64MB",
                "-c max_connections=150",
            ]
        )
        run(
            self._as_owner(
                [
                    str(postgres_bin_dir() / "pg_ctl"),
                    "-D",
                    str(self.data_dir),
                    "-l",
                    str(self.log_file),
                    "-o",
                    options,
                    "-w",
                    "-t",
                    str(int(timeout)),
                    "start",
                ]
            ),
            timeout=timeout + 10,
        )
        self.create_database()

    def psql(self, sql: str, database: str = "postgres") -> str:
        psql = shutil.which("psql") or str(postgres_bin_dir() / "psql")
        return run(
            [
                psql,
                "-h",
                "127.0.0.1",
                "-p",
                str(self.port),
                "-U",
                "postgres",
                "-d",
                database,
                "-v",
                "ON_ERROR_STOP=1",
                "-tAc",
                sql,
            ]
        )

    def create_database(self) -> None:
        """The ``airflow`` role and database (idempotent)."""
        if not self.psql(f"SELECT 1 FROM pg_roles WHERE rolname = '{DB_USER}'").strip():
            self.psql(f"CREATE ROLE {DB_USER} LOGIN")
        if not self.psql(f"SELECT 1 FROM pg_database WHERE datname = '{DB_NAME}'").strip():
            self.psql(f"CREATE DATABASE {DB_NAME} OWNER {DB_USER}")

    def stop(self) -> bool:
        if not (self.data_dir / "postmaster.pid").exists():
            return False
        run(
            self._as_owner(
                [
                    str(postgres_bin_dir() / "pg_ctl"),
                    "-D",
                    str(self.data_dir),
                    "-m",
                    "fast",
                    "-w",
                    "stop",
                ]
            ),
            timeout=60,
        )
        return True


def reachable_base(preferred: Path) -> Path:
    """``preferred`` if the cluster's owner can reach it, else a private dir under /tmp.

    As root the server runs as ``postgres``, which cannot enter a checkout under
    a 0700 home directory; a fresh clone in CI may live anywhere.
    """
    if os.geteuid() != 0 or _traversable_by_others(preferred):
        return preferred
    digest = hashlib.sha256(str(preferred.resolve()).encode()).hexdigest()[:10]
    return Path(tempfile.gettempdir()) / f"cdcgen-fullstack-pg-{digest}"


def _traversable_by_others(path: Path) -> bool:
    path = path.resolve()
    for parent in [*reversed(path.parents)]:
        if parent.exists() and not os.stat(parent).st_mode & 0o001:
            return False
    return True


def _port_open(port: int) -> bool:
    with socket.socket() as sock:
        sock.settimeout(0.5)
        return sock.connect_ex(("127.0.0.1", port)) == 0


def wait_for_port(port: int, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not _port_open(port):
        if time.monotonic() > deadline:
            raise StackError(f"nothing listens on 127.0.0.1:{port} after {timeout:.0f} s")
        time.sleep(0.5)
