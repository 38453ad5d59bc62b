"""Lease files: which live processes are using which sandbox topology.

A lease is an empty file ``<state>/leases/<topology>.<pid>``; it is void once
that pid has exited, so a crashed test session never blocks anyone. The policy
built on top (who may stop what) lives in :mod:`.sharing`.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path


def lease_dir(state_dir: Path) -> Path:
    return state_dir / "leases"


def lease_file(state_dir: Path, name: str, pid: int) -> Path:
    return lease_dir(state_dir) / f"{name}.{pid}"


def auto_marker(state_dir: Path, name: str) -> Path:
    """Present while topology ``name`` runs because a session (not a person) started it."""
    return lease_dir(state_dir) / f"{name}.auto"


def lessees(state_dir: Path, name: str) -> list[int]:
    """Live pids holding a lease on topology ``name`` (stale lease files are removed)."""
    live = []
    for path in lease_dir(state_dir).glob(f"{name}.*"):
        suffix = path.name.rsplit(".", 1)[1]
        if not suffix.isdigit():
            continue
        if _pid_alive(int(suffix)):
            live.append(int(suffix))
        else:
            path.unlink(missing_ok=True)
    return sorted(live)


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    with contextlib.suppress(OSError, IndexError):
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        return state != "Z"
    return True
