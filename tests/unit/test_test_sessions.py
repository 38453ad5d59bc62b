"""``make test``'s two concurrent sessions: every test in exactly one, no cluster test on
the side (its switch to three nodes would wait for the main session's end)."""

from __future__ import annotations

import subprocess
from pathlib import Path

from cdcgen.config import REPO_ROOT
from cdcgen_dev.test_sessions import SIDE_PATHS, main_command, run, side_command


def test_the_main_session_ignores_exactly_the_side_sessions_paths() -> None:
    main = main_command(["-x"])
    side = side_command(["-x"])
    assert [arg for arg in main if arg.startswith("--ignore=")] == [
        f"--ignore={path}" for path in SIDE_PATHS
    ]
    assert side[-len(SIDE_PATHS) :] == list(SIDE_PATHS)
    # No path of its own: pytest's testpaths (the whole suite) minus the side's.
    assert not [arg for arg in main if arg.startswith("tests")]
    assert "-x" in main and "-x" in side


def test_every_side_path_exists_and_none_holds_a_cluster_test() -> None:
    for path in SIDE_PATHS:
        assert (REPO_ROOT / path).exists(), path
    collected = subprocess.run(
        side_command(["--collect-only", "-q", "-m", "cluster"]),
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert collected.returncode == 5, collected.stdout[-2000:]  # 5: no test selected


def test_a_failing_session_fails_the_run_and_the_side_output_is_kept(tmp_path: Path) -> None:
    log = tmp_path / "side.log"
    status = run(["--no-such-option"], log=log)  # a usage error in both sessions
    assert status == 4  # pytest's exit status for it
    assert "unrecognized arguments: --no-such-option" in log.read_text()
