"""Background processes with a log file and a pid file, stopped by their own pid only.

The stack outlives the command that started it (``python -m cdcgen_dev.devstack up``
then ``down``), so each process gets its own session (its children, e.g. task
runners, share its process group) and a pid file; stopping signals that group and
nothing else — never processes found by name.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path


class StackError(RuntimeError):
    """A component did not install, start or answer; the message says which and where to look."""


@dataclass(frozen=True)
class Managed:
    """One named background process of the stack."""

    name: str
    pid_file: Path
    log_file: Path

    def recorded(self) -> tuple[int, str] | None:
        try:
            pid_text, start = self.pid_file.read_text().split()
            return int(pid_text), start
        except (OSError, ValueError):
            return None

    def pid(self) -> int | None:
        """The recorded pid if that process is still alive and still ours (same start time)."""
        recorded = self.recorded()
        if recorded is None:
            return None
        pid, start = recorded
        return pid if _start_time(pid) == start else None

    def running(self) -> bool:
        return self.pid() is not None

    def start(self, argv: Sequence[str], env: Mapping[str, str], cwd: Path | None = None) -> int:
        if self.running():
            raise StackError(f"{self.name} already runs (pid {self.pid()})")
        self.log_file.parent.mkdir(parents=True, exist_ok=True)
        self.pid_file.parent.mkdir(parents=True, exist_ok=True)
        with self.log_file.open("ab") as log:
            process = subprocess.Popen(
                list(argv),
                env=dict(env),
                cwd=cwd,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        self.pid_file.write_text(f"{process.pid} {_start_time(process.pid)}\n")
        return process.pid

    def stop(self, timeout: float = 30.0) -> bool:
        """SIGTERM the process group, SIGKILL after ``timeout``; True if it was running."""
        pid = self.pid()
        recorded = self.recorded()
        if pid is None and recorded is not None and _group_alive(recorded[0]):
            pid = recorded[0]  # the leader died; its children (same group) still run
        if pid is None:
            self.pid_file.unlink(missing_ok=True)
            return False
        _signal_group(pid, signal.SIGTERM)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and _group_alive(pid):
            _reap(pid)
            time.sleep(0.2)
        if _group_alive(pid):
            _signal_group(pid, signal.SIGKILL)
            time.sleep(0.5)
        _reap(pid)
        self.pid_file.unlink(missing_ok=True)
        return True

    def tail(self, lines: int = 40) -> str:
        try:
            return "\n".join(self.log_file.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"


def _start_time(pid: int) -> str:
    """Field 22 of /proc/<pid>/stat: tells a reused pid from ours."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return ""
    return stat.rsplit(")", 1)[1].split()[19]


def _signal_group(pid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pid, sig)  # the session leader's pgid is its pid


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _reap(pid: int) -> None:
    """Collect our own child if it exited (a zombie still counts as alive for killpg)."""
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)


def run(
    argv: Sequence[str],
    env: Mapping[str, str] | None = None,
    timeout: float = 600,
    cwd: Path | None = None,
) -> str:
    """Run a short command; raise :class:`StackError` with its output when it fails."""
    result = subprocess.run(
        list(argv),
        env=None if env is None else dict(env),
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    if result.returncode != 0:
        raise StackError(
            f"`{' '.join(argv)}` exited {result.returncode}:\n"
            f"{result.stdout[-2000:]}\n{result.stderr[-3000:]}"
        )
    return result.stdout
