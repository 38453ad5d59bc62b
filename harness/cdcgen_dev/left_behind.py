"""Run a command, then fail if it left a process of this checkout running.

``make test`` and ``make demo`` run through this: everything they start (sandbox nodes,
Spark JVMs, Airflow, the S3 server) must be gone when they end, or the next checkout's
``make demo`` finds 9042 taken. A process belongs to the checkout when its command line
or working directory names it. What ran before the command is left alone, and so is a
sandbox node whose node folder was running before: a session that had to stop a
developer's sandbox starts it again at the end (a new pid, the same node), as it should.

Leftovers are named with their pid and command, not ended: they may be another run's,
and the point is to find out which code failed to stop them.

    python -m cdcgen_dev.left_behind [--root DIR] [--grace S] -- COMMAND ...
"""

from __future__ import annotations

import argparse
import contextlib
import re
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import psutil

from cdcgen_dev.paths import REPO_ROOT

#: A sandbox node's JVM names its node folder (``-Dcassandra.storagedir=...``).
_NODE_DIR = re.compile(r"-Dcassandra\.storagedir=(\S+)")


def identity(process: psutil.Process, command: str) -> str:
    """What stays the same when a process is restarted: a sandbox node's folder (from
    its ``command`` line), else the pid (with its start time, so a reused pid is
    another process)."""
    node = _NODE_DIR.search(command)
    return f"node {node.group(1)}" if node else f"pid {process.pid}@{process.create_time()}"


def checkout_processes(root: Path) -> dict[str, str]:
    """Every other living process of the checkout under ``root``: identity -> description."""
    mine = {p.pid for p in (psutil.Process(), *psutil.Process().parents())}
    found: dict[str, str] = {}
    for process in psutil.process_iter():
        if process.pid in mine:
            continue
        with contextlib.suppress(psutil.Error):
            if process.status() == psutil.STATUS_ZOMBIE:
                continue
            command = " ".join(process.cmdline())
            if str(root) in command or _under(process.cwd(), root):
                found[identity(process, command)] = f"pid {process.pid}: {command[:200]}"
    return found


def _under(folder: str, root: Path) -> bool:
    return folder == str(root) or folder.startswith(f"{root}/")


def left_behind(before: dict[str, str], root: Path, grace: float) -> dict[str, str]:
    """What runs now and did not before, after waiting up to ``grace`` s for it to end."""
    deadline = time.monotonic() + grace
    while True:
        extra = {k: v for k, v in checkout_processes(root).items() if k not in before}
        if not extra or time.monotonic() >= deadline:
            return extra
        time.sleep(0.5)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m cdcgen_dev.left_behind")
    parser.add_argument("--root", type=Path, default=REPO_ROOT, help="the checkout")
    parser.add_argument("--grace", type=float, default=30.0, help="seconds to let it end")
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("no command given")
    root = args.root.resolve()
    before = checkout_processes(root)
    status = subprocess.call(command)
    extra = left_behind(before, root, args.grace)
    if not extra:
        return status
    shown = " ".join(command)
    print(
        f"`{shown}` left {len(extra)} process(es) of {root} running that it started:",
        file=sys.stderr,
    )
    for description in sorted(extra.values()):
        print(f"  {description}", file=sys.stderr)
    return status or 1


if __name__ == "__main__":
    sys.exit(main())
