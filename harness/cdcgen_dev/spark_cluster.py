"""A Spark standalone cluster on loopback, from the pinned pyspark distribution.

What a user who outgrows one machine points the ``cdcgen_spark`` connection at, small:
one master and N workers (one core, ``1g`` for executors each) started with the
distribution's own ``bin/spark-class`` (``org.apache.spark.deploy.master.Master`` /
``...worker.Worker``) on 127.0.0.1 and free ports. Executors then run in their own
JVMs under the workers, with their own Python workers, their own working directory
and the workers' environment, not the driver's: exactly the separation local mode
hides.

The workers' environment is the caller's minus ``PYTHONPATH`` and every ``CDCGEN_*``
variable, so a job that only works because its executors saw the driver's settings or
import path fails here as it would on a real cluster.

Every process gets its own process group (a worker's executors are in its group) and
dies with the process that started it (``PR_SET_PDEATHSIG``), so neither a failed test
nor a killed pytest leaves a JVM behind; :meth:`StandaloneCluster.stop` ends each group.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

MASTER_CLASS = "org.apache.spark.deploy.master.Master"
WORKER_CLASS = "org.apache.spark.deploy.worker.Worker"
LOOPBACK = "127.0.0.1"
_PR_SET_PDEATHSIG = 1


class SparkClusterError(RuntimeError):
    """The cluster did not come up (the message names the part and its log)."""


def spark_home() -> Path:
    """The installed pyspark distribution (its ``bin/`` and ``jars/``)."""
    import pyspark

    return Path(pyspark.__file__).resolve().parent


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((LOOPBACK, 0))
        port: int = sock.getsockname()[1]
        return port


def daemon_env(base: Mapping[str, str], log_dir: Path) -> dict[str, str]:
    """The master's and workers' environment: no ``PYTHONPATH``, no ``CDCGEN_*``."""
    env = {
        key: value
        for key, value in base.items()
        if key != "PYTHONPATH" and not key.startswith(("CDCGEN_", "PYSPARK_", "SPARK_"))
    }
    env.update(
        {
            "SPARK_HOME": str(spark_home()),
            "SPARK_LOCAL_IP": LOOPBACK,
            "SPARK_LOG_DIR": str(log_dir),
            "SPARK_DAEMON_MEMORY": "256m",
            "SPARK_NO_DAEMONIZE": "1",
        }
    )
    return env


def die_with_parent() -> None:
    """In the child before exec: SIGKILL when the starting process dies (Linux)."""
    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)


@dataclass
class StandaloneCluster:
    """A running master and its workers; :meth:`stop` ends them (idempotent)."""

    master_url: str
    web_url: str
    root: Path
    processes: list[subprocess.Popen[bytes]] = field(default_factory=list)

    @property
    def work_dirs(self) -> list[Path]:
        return sorted(self.root.glob("worker-*/work"))

    def state(self) -> dict[str, Any]:
        """The master's JSON status (workers, active and completed applications)."""
        with urllib.request.urlopen(f"{self.web_url}/json/", timeout=10) as response:
            state: dict[str, Any] = json.loads(response.read())
            return state

    def completed_apps(self) -> list[dict[str, Any]]:
        return list(self.state().get("completedapps", []))

    def executor_dirs(self) -> list[Path]:
        """``<worker>/work/<app>/<executor>``: each executor's working directory."""
        return sorted(p for work in self.work_dirs for p in work.glob("app-*/*") if p.is_dir())

    def stop(self, grace: float = 15) -> None:
        """SIGTERM every group (workers first, so they end their executors), then SIGKILL."""
        for process in reversed(self.processes):
            signal_group(process, signal.SIGTERM)
        deadline = time.monotonic() + grace
        for process in reversed(self.processes):
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(timeout=max(0.1, deadline - time.monotonic()))
            signal_group(process, signal.SIGKILL)
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(timeout=10)
        self.processes.clear()


def signal_group(process: subprocess.Popen[bytes], sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, sig)


def stop_group(process: subprocess.Popen[bytes], grace: float = 20.0) -> None:
    """End ``process``'s group: SIGTERM, then SIGKILL after ``grace`` seconds."""
    if process.poll() is not None:
        return
    signal_group(process, signal.SIGTERM)
    try:
        process.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        signal_group(process, signal.SIGKILL)
        process.wait(timeout=10)


def spawn(command: list[str], env: Mapping[str, str], log: Path) -> subprocess.Popen[bytes]:
    """``command`` in ``log``'s folder, output to ``log``, in its own process group, killed
    when this process dies."""
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("ab") as out:
        return subprocess.Popen(
            command,
            env=dict(env),
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            cwd=log.parent,
            start_new_session=True,
            preexec_fn=die_with_parent,
        )


def _spark_class(args: list[str], env: Mapping[str, str], log: Path) -> subprocess.Popen[bytes]:
    return spawn([str(spark_home() / "bin" / "spark-class"), *args], env, log)


def start(
    root: Path,
    *,
    workers: int = 2,
    cores: int = 1,
    memory: str = "1g",
    timeout: float = 180,
    base_env: Mapping[str, str] | None = None,
) -> StandaloneCluster:
    """Start a master and ``workers`` workers under ``root``; wait until all registered."""
    root = root.resolve()
    env = daemon_env(os.environ if base_env is None else base_env, root / "logs")
    env["PYSPARK_PYTHON"] = sys.executable  # the venv's, for executors' Python workers
    port, web = free_port(), free_port()
    cluster = StandaloneCluster(f"spark://{LOOPBACK}:{port}", f"http://{LOOPBACK}:{web}", root)
    master_args = [MASTER_CLASS, "--host", LOOPBACK, "--port", str(port), "--webui-port", str(web)]
    try:
        cluster.processes.append(_spark_class(master_args, env, root / "master" / "master.log"))
        _wait(cluster, lambda state: True, timeout, root / "master" / "master.log")
        for index in range(workers):
            home = root / f"worker-{index}"
            (home / "work").mkdir(parents=True, exist_ok=True)
            worker_args = [
                WORKER_CLASS,
                *("--host", LOOPBACK, "--port", str(free_port())),
                *("--webui-port", str(free_port()), "--cores", str(cores)),
                *("--memory", memory, "--work-dir", str(home / "work")),
                cluster.master_url,
            ]
            cluster.processes.append(_spark_class(worker_args, env, home / "worker.log"))
        _wait(
            cluster,
            lambda state: int(state.get("aliveworkers", 0)) >= workers,
            timeout,
            root / "worker-0" / "worker.log",
        )
    except BaseException:
        cluster.stop()
        raise
    return cluster


def _wait(cluster: StandaloneCluster, ready: Any, timeout: float, log: Path) -> None:
    deadline = time.monotonic() + timeout
    last: Exception | None = None
    while time.monotonic() < deadline:
        for process in cluster.processes:
            if process.poll() is not None:
                raise SparkClusterError(f"a Spark daemon exited ({process.returncode}); see {log}")
        try:
            if ready(cluster.state()):
                return
        except OSError as exc:
            last = exc
        time.sleep(0.5)
    raise SparkClusterError(f"Spark standalone not ready after {timeout:.0f} s ({last}); see {log}")


@contextlib.contextmanager
def standalone(root: Path, **options: Any) -> Iterator[StandaloneCluster]:
    """:func:`start` ... :meth:`~StandaloneCluster.stop`, also on errors."""
    cluster = start(root, **options)
    try:
        yield cluster
    finally:
        cluster.stop()


def main() -> int:
    """``python -m cdcgen_dev.spark_cluster DIR``: a cluster until Ctrl-C (prints its URL)."""
    root = Path(sys.argv[1] if len(sys.argv) > 1 else "var/spark-standalone")
    with standalone(root) as cluster:
        print(f"master {cluster.master_url}  UI {cluster.web_url}", flush=True)
        with contextlib.suppress(KeyboardInterrupt):
            signal.pause()
    return 0


if __name__ == "__main__":
    sys.exit(main())
