"""Whether a sandbox node's JVM is running, read from /proc (cdcgen_dev.cassandra.process)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from cdcgen_dev.cassandra import process

#: ``exit`` (the calling thread only, unlike ``exit_group``) by machine.
SYS_EXIT = {"x86_64": 60, "aarch64": 93}[os.uname().machine]
#: A process whose main thread ends while another runs on, as Cassandra's does once the
#: node has started.
PROGRAM = (
    "import ctypes, threading, time\n"
    "threading.Thread(target=time.sleep, args=(60,)).start()\n"
    f"ctypes.CDLL(None).syscall({SYS_EXIT}, 0)\n"
)


def test_a_node_whose_main_thread_ended_is_still_running(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Both ways of reading that moment count it as running: the leader already a
    zombie, and the leader seen alive, then without a command line."""
    yaml = str(tmp_path / "cassandra.yaml")
    child = subprocess.Popen([sys.executable, "-c", PROGRAM, "CassandraDaemon", yaml])
    try:
        deadline = time.monotonic() + 10
        while process._state(child.pid) != "Z" and time.monotonic() < deadline:
            time.sleep(0.05)
        assert process._state(child.pid) == "Z"
        assert Path(f"/proc/{child.pid}/cmdline").read_bytes() == b""
        assert process.is_running(child.pid, yaml)
        states = iter(["S"])  # the first read sees the leader before it exits
        real_state = process._state
        monkeypatch.setattr(process, "_state", lambda pid: next(states, None) or real_state(pid))
        assert process.is_running(child.pid, yaml)
    finally:
        child.kill()
        child.wait()
    monkeypatch.undo()
    assert not process.is_running(child.pid, yaml)


def test_a_node_read_the_moment_its_exec_returns_is_running(tmp_path: Path) -> None:
    """Popen returns once the exec has closed its error pipe, a moment before the kernel
    sets the new program's arguments up: read then, the command line is empty. Read that
    way, a just-started node fails for ``exited during start-up`` with empty logs, as
    two CI runs' second cluster did; the old check failed this test every time."""
    yaml = str(tmp_path / "cassandra.yaml")
    for _ in range(300):
        child = subprocess.Popen(
            ["sh", "-c", "sleep 60", "CassandraDaemon", yaml],
            start_new_session=True,
            close_fds=True,
        )
        try:
            assert process.is_running(child.pid, yaml)
        finally:
            child.kill()
            child.wait()
