"""Pid files and process liveness for detached Cassandra JVMs (Linux /proc).

A pid alone is not proof: pids are reused, and a node we started from a
long-lived parent (a pytest session) lingers as a zombie after it exits. So a
node counts as running only if /proc/<pid> exists, is not a zombie, and its
command line names CassandraDaemon and that node's own cassandra.yaml.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from pathlib import Path

_CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
#: How long a live process may show an empty command line (see ``is_running``).
_NO_COMMAND_LINE_GRACE = 2.0


def read_pid(pid_file: Path) -> int | None:
    try:
        return int(pid_file.read_text().strip())
    except (FileNotFoundError, ValueError):
        return None


def write_pid(pid_file: Path, pid: int) -> None:
    pid_file.write_text(f"{pid}\n")


def remove_pid(pid_file: Path) -> None:
    pid_file.unlink(missing_ok=True)


def is_running(pid: int, marker: str) -> bool:
    """True if ``pid`` is a live (non-zombie) process whose command line holds ``marker``."""
    deadline = time.monotonic() + _NO_COMMAND_LINE_GRACE
    while True:
        state = _state(pid)
        if state is None:
            return False
        if state in ("Z", "X"):
            return _still_exiting(pid)
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ")
        except OSError:
            return False
        if cmdline:
            return marker.encode() in cmdline and b"CassandraDaemon" in cmdline
        # A live process shows no command line for two moments: its exec is under way
        # (Popen returns once the exec closed its error pipe, before the kernel has set
        # the new program's arguments up), or its leader thread exits this instant
        # (Cassandra's main thread ends once the node has started; read again, a zombie).
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.01)


def uptime_seconds(pid: int) -> float | None:
    """Seconds since the process started, from /proc/<pid>/stat and the boot time."""
    fields = _stat_fields(pid)
    if fields is None:
        return None
    started_ticks = int(fields[19])  # field 22 overall; fields[] starts at field 3
    boot_time = _boot_time()
    return round(time.time() - (boot_time + started_ticks / _CLOCK_TICKS), 1)


def rss_bytes(pid: int) -> int | None:
    """Resident set size, for reporting memory per node."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    except OSError:
        return None
    return None


def stop(processes: list[tuple[int, str]], *, timeout: float) -> list[int]:
    """SIGTERM all ``(pid, marker)`` processes at once, SIGKILL those left after ``timeout``.

    SIGTERM lets Cassandra drain and announce its shutdown, so peers mark it
    DOWN at once instead of after the failure detector's ~10 s. Stopping in
    parallel keeps a three-node ``down`` as fast as a one-node one. Returns the
    pids that had to be killed.
    """
    live = [(pid, marker) for pid, marker in processes if is_running(pid, marker)]
    for pid, _ in live:
        _signal(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    killed = []
    for pid, marker in live:
        if not wait_exit(pid, marker, timeout=max(0.0, deadline - time.monotonic())):
            kill(pid, marker)
            killed.append(pid)
    return killed


def kill(pid: int, marker: str) -> None:
    """SIGKILL at once: a crash, as opposed to an orderly shutdown."""
    if is_running(pid, marker):
        _signal(pid, signal.SIGKILL)
        wait_exit(pid, marker, timeout=10.0)


def wait_exit(pid: int, marker: str, *, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not is_running(pid, marker):
            return True
        time.sleep(0.2)
    return not is_running(pid, marker)


def _signal(pid: int, signum: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signum)


def _still_exiting(pid: int) -> bool:
    """A zombie leader may still have threads tearing down (and holding its ports).

    The JVM's main thread can be reported as a zombie while other threads are
    still unmapping a large heap; its sockets close only when the last thread
    exits. Reap the process if it is our child; otherwise look for threads.
    """
    try:
        reaped, _ = os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        try:
            return len(os.listdir(f"/proc/{pid}/task")) > 1
        except OSError:
            return False
    return reaped == 0


def _stat_fields(pid: int) -> list[str] | None:
    """Fields after the ``(comm)`` of /proc/<pid>/stat (comm may contain spaces)."""
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return raw[raw.rindex(")") + 2 :].split()


def _state(pid: int) -> str | None:
    fields = _stat_fields(pid)
    return fields[0] if fields else None


def _boot_time() -> float:
    for line in Path("/proc/stat").read_text().splitlines():
        if line.startswith("btime "):
            return float(line.split()[1])
    return 0.0
