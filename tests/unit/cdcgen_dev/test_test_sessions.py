"""``make test``'s two concurrent sessions: every test in exactly one, no cluster test on
the side (its switch to three nodes would wait for the main session's end)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from cdcgen_dev.paths import REPO_ROOT
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
    """A ``cluster`` test is marked so, or asks for the three-node fixture, in its file."""
    files = [
        file
        for path in SIDE_PATHS
        for file in (
            [REPO_ROOT / path] if path.endswith(".py") else (REPO_ROOT / path).rglob("*.py")
        )
    ]
    assert all(file.exists() for file in files), files
    needles = ("mark." + "cluster", "cassandra_" + "cluster3")  # not this file's own text
    for file in files:
        text = file.read_text()
        assert not any(needle in text for needle in needles), file


def test_a_failing_session_fails_the_run_and_the_side_output_is_kept(tmp_path: Path) -> None:
    log = tmp_path / "side.log"
    passing = [sys.executable, "-c", "print('no issues')"]
    status = run(["--no-such-option"], log=log, typecheck=passing, typecheck_log=tmp_path / "t")
    assert status == 4  # pytest's exit status for a usage error, in both sessions
    assert "unrecognized arguments: --no-such-option" in log.read_text()
    assert (tmp_path / "t").read_text() == "no issues\n"


def test_a_failing_type_check_fails_a_run_whose_sessions_pass(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    failing = [sys.executable, "-c", "print('error: a type error'); raise SystemExit(1)"]
    status = run(
        ["--version"],  # both sessions pass at once
        log=tmp_path / "side.log",
        typecheck=failing,
        typecheck_log=tmp_path / "typecheck.log",
    )
    assert status == 1
    assert "error: a type error" in capsys.readouterr().out
