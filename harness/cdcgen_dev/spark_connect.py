"""A local Spark Connect server for tests, the benchmarks and the demo.

It is the product's own server (``python -m cdcgen.spark.connect_server``) on a free
loopback port, in its own process group, killed with the process that started it
(``PR_SET_PDEATHSIG``) and ended by :func:`connect_server` on the way out, so nothing
is left running. Ready means a session connected, passed the product's check of the
server's settings and ran a query.
"""

from __future__ import annotations

import contextlib
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from cdcgen.spark.connect_server import server_env
from cdcgen.spark.session import JobKind, job_conf, remote_session
from cdcgen_dev.spark_cluster import LOOPBACK, free_port, signal_group, spawn

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


class SparkConnectError(RuntimeError):
    """The server did not come up (the message names its log)."""


@dataclass(frozen=True)
class ConnectServer:
    url: str
    pid: int
    log: Path


@contextlib.contextmanager
def connect_server(root: Path, timeout: float = 180) -> Iterator[ConnectServer]:
    """A running server whose log is ``root/connect.log``; stopped on the way out."""
    port, log = free_port(), root / "connect.log"
    command = [sys.executable, "-m", "cdcgen.spark.connect_server", "--port", str(port)]
    command += ["--master", "local[2]"]
    process = spawn(command, server_env(), log)
    server = ConnectServer(f"sc://{LOOPBACK}:{port}", process.pid, log)
    session = None
    try:
        session = _wait_ready(server, process, port, timeout)
        yield server
    finally:
        if session is not None:  # this process's sessions on it (one, shared): released
            with contextlib.suppress(Exception):
                session.stop()
        signal_group(process, signal.SIGTERM)
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            signal_group(process, signal.SIGKILL)
            process.wait(timeout=10)


def _wait_ready(
    server: ConnectServer, process: subprocess.Popen[bytes], port: int, timeout: float
) -> SparkSession:
    deadline = time.monotonic() + timeout
    while not _listening(port):
        if process.poll() is not None:
            raise SparkConnectError(f"the server exited ({process.returncode}); see {server.log}")
        if time.monotonic() > deadline:
            raise SparkConnectError(f"no server after {timeout:.0f} s; see {server.log}")
        time.sleep(0.25)
    session = remote_session(server.url, job_conf(JobKind.VALIDATION))
    session.sql("SELECT 1").collect()
    return session


def _listening(port: int) -> bool:
    with contextlib.suppress(OSError), socket.create_connection((LOOPBACK, port), timeout=1):
        return True
    return False


def main() -> int:
    """``python -m cdcgen_dev.spark_connect DIR``: a server until Ctrl-C (prints its URL)."""
    root = Path(sys.argv[1] if len(sys.argv) > 1 else "var/spark-connect")
    with connect_server(root) as server:
        print(f"CDCGEN_SPARK_REMOTE={server.url}", flush=True)
        with contextlib.suppress(KeyboardInterrupt):
            signal.pause()
    return 0


if __name__ == "__main__":
    sys.exit(main())
