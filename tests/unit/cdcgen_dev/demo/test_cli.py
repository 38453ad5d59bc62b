"""The demo's command line, its one-at-a-time lock and its process guard.

Nothing here runs the demo: the run itself is replaced by a recorder (our own code,
not a library), so each test shows what the command line does before any sandbox,
keyspace or DAG is touched. The lock and the guard are exercised with real
processes, since what they protect against is another process.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest

from cdcgen.core.generation import SourceMode
from cdcgen_dev.demo import cli
from cdcgen_dev.demo.lock import DemoBusy, DemoLock
from cdcgen_dev.demo.modes import PLANS, ModePlan, plan_for

HOLD = (
    "import sys; from pathlib import Path; from cdcgen_dev.demo.lock import DemoLock; "
    "lock = DemoLock(Path(sys.argv[1]), 'tablets'); lock.acquire(); "
    "print('held', flush=True); sys.stdin.read()"
)


@pytest.fixture
def runs(monkeypatch: pytest.MonkeyPatch) -> list[tuple[SourceMode, bool]]:
    """Records each run the command line would start, instead of starting it."""
    started: list[tuple[SourceMode, bool]] = []

    def record(plan: ModePlan, *, emulate_only: bool, airflow_python: Path | None) -> int:
        started.append((plan.mode, emulate_only))
        return 0

    monkeypatch.setattr(cli, "_run_guarded", record)
    return started


@pytest.fixture
def holder(tmp_path: Path) -> Iterator[subprocess.Popen[str]]:
    """Another process holding the demo lock ``tmp_path/demo.lock`` until its stdin closes."""
    process = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(tmp_path / "demo.lock")],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )
    assert process.stdout is not None and process.stdout.readline().strip() == "held"
    yield process
    if process.poll() is None:
        process.kill()
    process.wait(timeout=10)


# --- the command line ---------------------------------------------------------------


def test_help_prints_usage_and_runs_nothing(
    runs: list[object], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        cli.main(["--help"], lock_path=tmp_path / "demo.lock")
    assert exited.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: python -m cdcgen_dev.demo")
    assert "--mode {raft,gossip,v1,tablets}" in out and "--wait" in out
    assert "airflow dags test cdc_generations" in out
    assert runs == []
    assert not (tmp_path / "demo.lock").exists()


def test_help_of_the_module_entry_point_returns_at_once() -> None:
    """``python -m cdcgen_dev.demo --help`` used to run the whole demo."""
    began = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "cdcgen_dev.demo", "--help"],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("usage:")
    assert "1/6" not in done.stdout
    assert time.monotonic() - began < 30


def test_unknown_mode_is_refused(
    runs: list[object], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        cli.main(["--mode", "cassandra"], lock_path=tmp_path / "demo.lock")
    assert exited.value.code == 2
    assert "invalid choice: 'cassandra'" in capsys.readouterr().err
    assert runs == []
    assert not (tmp_path / "demo.lock").exists()
    with pytest.raises(ValueError, match="raft, gossip, v1, tablets"):
        plan_for("cassandra")


def test_mode_defaults_to_raft_and_is_passed_on(
    runs: list[tuple[SourceMode, bool]], tmp_path: Path
) -> None:
    lock = tmp_path / "demo.lock"
    assert cli.main([], lock_path=lock) == 0
    assert cli.main(["--mode", "tablets", "--emulate-only"], lock_path=lock) == 0
    assert runs == [(SourceMode.RAFT, False), (SourceMode.TABLETS, True)]
    assert set(PLANS) == set(SourceMode)


# --- one demo at a time ---------------------------------------------------------------


def test_lock_refuses_a_second_holder(tmp_path: Path) -> None:
    path = tmp_path / "demo.lock"
    first = DemoLock(path, mode="gossip")
    first.acquire()
    with pytest.raises(DemoBusy) as busy:
        DemoLock(path, mode="raft").acquire()
    assert busy.value.holder is not None
    assert (busy.value.holder.pid, busy.value.holder.mode) == (os.getpid(), "gossip")
    assert f"pid {os.getpid()}" in str(busy.value) and "--wait" in str(busy.value)
    first.release()
    with DemoLock(path, mode="raft") as second:
        assert second.held
    assert DemoLock(path).holder() is None  # released: nobody is named


def test_second_demo_refuses_at_once_naming_the_first(
    holder: subprocess.Popen[str],
    runs: list[object],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    began = time.monotonic()
    assert cli.main(["--mode", "raft"], lock_path=tmp_path / "demo.lock") == cli.BUSY
    assert time.monotonic() - began < 5
    err = capsys.readouterr().err
    assert f"pid {holder.pid} (mode tablets" in err
    assert runs == []


def test_lock_of_a_killed_demo_is_free(
    holder: subprocess.Popen[str], runs: list[tuple[SourceMode, bool]], tmp_path: Path
) -> None:
    holder.kill()
    holder.wait(timeout=10)
    assert cli.main(["--mode", "v1"], lock_path=tmp_path / "demo.lock") == 0
    assert runs == [(SourceMode.V1, False)]


def test_wait_queues_behind_the_running_demo(
    holder: subprocess.Popen[str],
    runs: list[tuple[SourceMode, bool]],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    statuses: list[int] = []
    waiting = threading.Thread(
        target=lambda: statuses.append(
            cli.main(["--mode", "gossip", "--wait"], lock_path=tmp_path / "demo.lock")
        )
    )
    waiting.start()
    time.sleep(1.5)
    assert runs == [] and waiting.is_alive()
    assert f"waiting for pid {holder.pid}" in capsys.readouterr().out
    assert holder.stdin is not None
    holder.stdin.close()  # the first demo ends
    waiting.join(timeout=20)
    assert statuses == [0]
    assert runs == [(SourceMode.GOSSIP, False)]


# --- nothing left behind ----------------------------------------------------------------


#: Run in a child process: the guard ends every child of the process it runs in, and in
#: the test process that would include the session's Spark JVM and Cassandra nodes.
GUARD_SCRIPT = """
import json, os, signal, subprocess, sys, time
import psutil
from cdcgen_dev.demo.processes import no_process_left_behind

QUIET = {"stdin": subprocess.DEVNULL, "stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}

def sleeper(own_session):
    # a shell that starts two sleeps (as airflow starts spark-submit and its JVM)
    return subprocess.Popen(
        ["sh", "-c", "sleep 300 & sleep 300; wait"], start_new_session=own_session, **QUIET
    )

def family(started):
    deadline = time.monotonic() + 10
    while True:
        found = [
            p.pid
            for s in started
            for p in [psutil.Process(s.pid), *psutil.Process(s.pid).children()]
        ]
        if len(found) == 3 * len(started) or time.monotonic() > deadline:
            return found
        time.sleep(0.1)

before = signal.getsignal(signal.SIGTERM)
kept = subprocess.Popen(["sleep", "300"], start_new_session=True, **QUIET)
try:
    with no_process_left_behind(keep=lambda: {kept.pid}):
        started = [sleeper(True), sleeper(False)] if sys.argv[1] == "normal" else [sleeper(True)]
        print(json.dumps({"kept": kept.pid, "family": family(started)}), flush=True)
        if sys.argv[1] == "sigterm":
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(5)  # the signal arrives here
finally:
    print(json.dumps({"restored": signal.getsignal(signal.SIGTERM) == before}), flush=True)
"""


def run_guarded(how: str) -> tuple[subprocess.CompletedProcess[str], dict[str, Any]]:
    done = subprocess.run(
        [sys.executable, "-c", GUARD_SCRIPT, how],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    lines = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    merged: dict[str, Any] = {}
    for line in lines:
        merged.update(line)
    return done, merged


def test_children_and_grandchildren_are_ended_but_kept_ones_stay() -> None:
    done, seen = run_guarded("normal")
    kept = psutil.Process(seen["kept"])
    try:
        assert done.returncode == 0, done.stderr
        assert len(seen["family"]) == 6
        _, alive = psutil.wait_procs(_alive(seen["family"]), timeout=15)
        assert alive == []
        assert kept.is_running() and kept.status() != psutil.STATUS_ZOMBIE
        assert seen["restored"]
    finally:
        kept.kill()


def test_sigterm_interrupts_the_run_and_still_cleans_up() -> None:
    done, seen = run_guarded("sigterm")
    psutil.Process(seen["kept"]).kill()
    assert done.returncode != 0 and "KeyboardInterrupt: signal SIGTERM" in done.stderr
    assert len(seen["family"]) == 3
    _, alive = psutil.wait_procs(_alive(seen["family"]), timeout=15)
    assert alive == []
    assert seen["restored"]


def _alive(pids: list[int]) -> list[psutil.Process]:
    found = []
    for pid in pids:
        try:
            found.append(psutil.Process(pid))
        except psutil.NoSuchProcess:
            continue
    return found
