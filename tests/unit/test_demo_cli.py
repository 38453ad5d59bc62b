"""The demo's command line, its one-at-a-time lock and its process guard.

Nothing here runs the demo: the run itself is replaced by a recorder (our own code,
not a library), so each test shows what the command line does before any sandbox,
keyspace or DAG is touched. The lock and the guard are exercised with real
processes, since what they protect against is another process.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from cdcgen.core.generation import SourceMode
from cdcgen_dev.demo import cli
from cdcgen_dev.demo.lock import DemoBusy, DemoLock
from cdcgen_dev.demo.modes import PLANS, ModePlan, plan_for
from cdcgen_dev.demo.processes import no_process_left_behind

HOLD = (
    "import sys; from pathlib import Path; from cdcgen_dev.demo.lock import DemoLock; "
    "lock = DemoLock(Path(sys.argv[1]), 'tablets'); lock.acquire(); "
    "print('held', flush=True); sys.stdin.read()"
)


@pytest.fixture
def runs(monkeypatch: pytest.MonkeyPatch) -> list[tuple[SourceMode, bool]]:
    """Records each run the command line would start, instead of starting it."""
    started: list[tuple[SourceMode, bool]] = []

    def record(plan: ModePlan, *, emulate_only: bool) -> int:
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


def _sleeper(*, own_session: bool) -> subprocess.Popen[bytes]:
    """A shell that starts two sleeps (as airflow starts spark-submit and its JVM)."""
    return subprocess.Popen(
        ["sh", "-c", "sleep 300 & sleep 300; wait"], start_new_session=own_session
    )


def _family(started: list[subprocess.Popen[bytes]]) -> list[psutil.Process]:
    """The shells and their sleeps, once the sleeps have started."""
    deadline = time.monotonic() + 10
    while True:
        family = [
            p for s in started for p in [psutil.Process(s.pid), *psutil.Process(s.pid).children()]
        ]
        if len(family) == 3 * len(started) or time.monotonic() > deadline:
            return family
        time.sleep(0.1)


def test_children_and_grandchildren_are_ended_but_kept_ones_stay() -> None:
    kept = subprocess.Popen(["sleep", "300"], start_new_session=True)
    try:
        with no_process_left_behind(keep=lambda: {kept.pid}):
            family = _family([_sleeper(own_session=True), _sleeper(own_session=False)])
            assert len(family) == 6
        _, alive = psutil.wait_procs(family, timeout=15)
        assert alive == []
        assert kept.poll() is None
    finally:
        kept.kill()
        kept.wait(timeout=10)


def test_sigterm_interrupts_the_run_and_still_cleans_up() -> None:
    before = signal.getsignal(signal.SIGTERM)
    family: list[psutil.Process] = []
    with pytest.raises(KeyboardInterrupt, match="SIGTERM"), no_process_left_behind():
        family = _family([_sleeper(own_session=True)])
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(5)  # the signal arrives here
    assert len(family) == 3
    _, alive = psutil.wait_procs(family, timeout=15)
    assert alive == []
    assert signal.getsignal(signal.SIGTERM) == before
