"""``make test``'s pytest: the suite as two concurrent sessions, one per core.

Most of the suite's time is spent waiting: for a generation to start on every node's
clock, for a JVM, for Cassandra. One session leaves a core idle for much of the run,
so the suite is cut in two fixed parts that run side by side:

* the *side* session: the unit tests, the two longest end-to-end scenarios (the demo
  in every source mode and the changes DAG), the torture test's small budget and the
  tablets churn, none of them a ``cluster`` test;
* the *main* session: everything else (``--ignore`` of exactly the side's paths, so
  every test runs in exactly one session), the ``cluster`` tests last, as always.

The sessions share what was built to be shared: the Cassandra sandbox through its pid
leases (the main session's switch to the three-node cluster waits until the side
session has released the single node), the e2e Airflow template home through a lock on
its migration. The type check (mypy, long on a fresh clone)
runs beside them while they start their sandboxes, instead of before them. The main
session prints as it goes; the side session's output and the type check's are kept in
``var/test-sessions/`` and printed after it. The exit status is the first failing
one's: the main session's, the side's, then the type check's.

    python -m cdcgen_dev.test_sessions [PYTEST_ARGS ...]
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

from cdcgen_dev.paths import REPO_ROOT

#: What the side session runs (paths relative to the checkout); the main session ignores them.
SIDE_PATHS = (
    "tests/e2e/test_demo.py",
    "tests/e2e/test_provider_wheel.py",
    "tests/e2e/test_changes_dag.py",
    "tests/integration/test_torture.py",
    "tests/integration/test_tablets_churn.py",
    "tests/unit",
)
#: The side session's output.
SIDE_LOG = REPO_ROOT / "var" / "test-sessions" / "side.log"
#: The type check's output.
TYPECHECK_LOG = REPO_ROOT / "var" / "test-sessions" / "typecheck.log"


def pytest_command(*args: str) -> list[str]:
    return [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args]


def side_command(extra: Sequence[str] = ()) -> list[str]:
    return pytest_command(*extra, *SIDE_PATHS)


def main_command(extra: Sequence[str] = ()) -> list[str]:
    """Every test path but the side's: pytest's ``testpaths`` minus ``--ignore``s."""
    return pytest_command(*extra, *(f"--ignore={path}" for path in SIDE_PATHS))


def typecheck_command() -> list[str]:
    """mypy with the project's settings (``pyproject.toml``), as ``make typecheck``."""
    return [sys.executable, "-m", "mypy"]


def run(
    extra: Sequence[str] = (),
    log: Path = SIDE_LOG,
    typecheck: Sequence[str] | None = None,
    typecheck_log: Path = TYPECHECK_LOG,
) -> int:
    """Both sessions and the type check (``typecheck``: its command, mypy by default)."""
    log.parent.mkdir(parents=True, exist_ok=True)
    typecheck_log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("w") as side_output, typecheck_log.open("w") as typecheck_output:
        beside = [
            subprocess.Popen(command, cwd=REPO_ROOT, stdout=output, stderr=subprocess.STDOUT)
            for command, output in (
                (side_command(extra), side_output),
                (list(typecheck or typecheck_command()), typecheck_output),
            )
        ]
        try:
            main_status = subprocess.run(main_command(extra), cwd=REPO_ROOT, check=False).returncode
            side_status, typecheck_status = (process.wait() for process in beside)
        finally:
            for process in beside:
                if process.poll() is None:  # interrupted: what runs beside ends with this
                    process.terminate()
                    process.wait()
    print(f"\n===== the type check, exit {typecheck_status} =====")
    print(typecheck_log.read_text(), end="")
    print(f"\n===== the side session ({' '.join(SIDE_PATHS)}), exit {side_status} =====")
    print(log.read_text(), end="", flush=True)
    print(
        f"===== main session exit {main_status}, side session exit {side_status}, "
        f"type check exit {typecheck_status} ====="
    )
    return main_status or side_status or typecheck_status


def main(argv: Sequence[str] | None = None) -> int:
    return run(sys.argv[1:] if argv is None else argv)


if __name__ == "__main__":
    sys.exit(main())
