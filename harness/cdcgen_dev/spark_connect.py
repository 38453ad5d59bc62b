"""A local Spark Connect server for tests, the benchmarks and the demo.

It is the product's own server (``python -m cdcgen.spark_runtime.connect_server``) on a free
loopback port, in its own process group, killed with the process that started it
(``PR_SET_PDEATHSIG``) and ended by :func:`connect_server` on the way out, so nothing
is left running. Ready means a session connected, passed the product's check of the
server's settings and ran a query. Each server gets a token of its own, made here and
handed over in its launcher's environment; clients present it (:meth:`ConnectServer.
client_env` for a child process, ``remote_session(..., token=server.token)`` here).
"""

from __future__ import annotations

import contextlib
import os
import secrets
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import SecretStr

from cdcgen.spark_runtime.connect_settings import HOST_ENV, REMOTE_ENV, TOKEN_ENV, TOKEN_FILE_ENV
from cdcgen.spark_runtime.session import JobKind, job_conf, remote_session
from cdcgen_dev.spark_cluster import LOOPBACK, free_port, spawn, stop_group

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


class SparkConnectError(RuntimeError):
    """The server did not come up (the message names its log)."""


@dataclass(frozen=True)
class ConnectServer:
    url: str
    pid: int
    log: Path
    token: SecretStr
    host: str
    port: int

    def client_env(self) -> dict[str, str]:
        """What a child process needs to run its jobs on this server."""
        return {REMOTE_ENV: self.url, TOKEN_ENV: self.token.get_secret_value()}


@contextlib.contextmanager
def connect_server(
    root: Path, timeout: float = 180, environ: Mapping[str, str] | None = None
) -> Iterator[ConnectServer]:
    """A running server whose log is ``root/connect.log``; stopped on the way out.

    ``environ`` (default: this process's) is what its launcher inherits, which the
    product strips of secrets before the JVM starts."""
    port, log = free_port(), root / "connect.log"
    token = SecretStr(secrets.token_urlsafe(32))
    command = [sys.executable, "-m", "cdcgen.spark_runtime.connect_server", "--port", str(port)]
    command += ["--master", "local[2]"]
    env = {**(os.environ if environ is None else environ), HOST_ENV: LOOPBACK}
    process = spawn(command, {**env, TOKEN_ENV: token.get_secret_value()}, log)
    server = ConnectServer(f"sc://{LOOPBACK}:{port}", process.pid, log, token, LOOPBACK, port)
    session = None
    try:
        session = _wait_ready(server, process, port, timeout)
        yield server
    finally:
        if session is not None:  # this process's sessions on it (one, shared): released
            with contextlib.suppress(Exception):
                session.stop()
        stop_group(process)


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
    session = remote_session(server.url, job_conf(JobKind.VALIDATION), token=server.token)
    session.sql("SELECT 1").collect()
    return session


def _listening(port: int) -> bool:
    with contextlib.suppress(OSError), socket.create_connection((LOOPBACK, port), timeout=1):
        return True
    return False


def main() -> int:
    """``python -m cdcgen_dev.spark_connect DIR``: a server until Ctrl-C; prints its URL,
    and writes its token to ``DIR/token`` (readable by this user only), not the screen."""
    root = Path(sys.argv[1] if len(sys.argv) > 1 else "var/spark-connect")
    with connect_server(root) as server:
        token_file = root / "token"
        token_file.unlink(missing_ok=True)
        descriptor = os.open(token_file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(descriptor, "w") as handle:
            handle.write(server.token.get_secret_value())
        print(f"{REMOTE_ENV}={server.url}", flush=True)
        print(f"{TOKEN_FILE_ENV}={token_file.absolute()}", flush=True)
        try:
            with contextlib.suppress(KeyboardInterrupt):
                signal.pause()
        finally:
            token_file.unlink(missing_ok=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
