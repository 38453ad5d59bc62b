"""``python -m cdcgen_dev.left_behind``: the check ``make test`` and ``make demo`` run in.

Real processes: a command that leaves a detached child running under the checkout
fails the check, naming it; one that cleans up passes with its own exit status; a
process that ran before is not the command's; a sandbox node stopped and started again
(a new pid, the same node folder) is the node that ran before.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from cdcgen_dev.left_behind import identity

CHECK = [sys.executable, "-m", "cdcgen_dev.left_behind", "--grace", "1"]


@pytest.fixture
def checkout(tmp_path: Path) -> Iterator[Path]:
    root = tmp_path / "checkout"
    root.mkdir()
    (root / "sleeper.py").write_text("import time\ntime.sleep(120)\n")
    # Starts the sleeper in its own session (as daemons and sandbox nodes are) and exits.
    (root / "spawn.py").write_text(
        textwrap.dedent(
            f"""
            import subprocess, sys
            child = subprocess.Popen(
                [sys.executable, {str(root / "sleeper.py")!r}],
                start_new_session=True,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            print(child.pid)
            """
        )
    )
    yield root
    for process in psutil.process_iter():
        try:
            if str(root) in " ".join(process.cmdline()):
                process.kill()
        except psutil.Error:
            pass


def run_check(root: Path, *command: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*CHECK, "--root", str(root), "--", *command],
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_a_process_left_running_fails_the_check_and_is_named(checkout: Path) -> None:
    done = run_check(checkout, sys.executable, str(checkout / "spawn.py"))
    sleeper = int(done.stdout.split()[0])
    assert done.returncode == 1
    assert "left 1 process(es)" in done.stderr
    assert f"pid {sleeper}: " in done.stderr and "sleeper.py" in done.stderr
    assert psutil.pid_exists(sleeper), "named, not ended: it may be another run's"


def test_a_clean_command_keeps_its_own_status(checkout: Path) -> None:
    assert run_check(checkout, sys.executable, "-c", "pass").returncode == 0
    failed = run_check(checkout, sys.executable, "-c", "raise SystemExit(3)")
    assert failed.returncode == 3 and failed.stderr == ""


def test_what_ran_before_is_not_the_commands(checkout: Path) -> None:
    before = subprocess.Popen([sys.executable, str(checkout / "sleeper.py")])
    try:
        assert run_check(checkout, sys.executable, "-c", "pass").returncode == 0
    finally:
        before.kill()
        before.wait()


def test_a_restarted_sandbox_node_is_the_same_node(tmp_path: Path) -> None:
    node = tmp_path / "var" / "cassandra" / "single" / "node1"
    command = [
        sys.executable,
        "-c",
        "import time; time.sleep(60)",
        f"-Dcassandra.storagedir={node}",
    ]
    first, second = subprocess.Popen(command), subprocess.Popen(command)
    try:
        ids = {identity(psutil.Process(p.pid), " ".join(command)) for p in (first, second)}
        assert ids == {f"node {node}"}
        other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
        try:
            shown = " ".join(psutil.Process(other.pid).cmdline())
            assert identity(psutil.Process(other.pid), shown).startswith(f"pid {other.pid}@")
        finally:
            other.kill()
            other.wait()
    finally:
        for process in (first, second):
            process.kill()
            process.wait()
