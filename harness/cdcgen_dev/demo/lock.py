"""One demo at a time: an exclusive ``flock`` on ``var/demo/demo.lock`` held for the run.

Every demo resets the same keyspaces (``demo_*``), lake and Airflow home, so two at
once break each other half-way (one drops a table the other's DAG is reading:
"Unknown CF"). The second one must instead refuse at once, naming who holds the
sandbox, or wait for it. ``flock`` dies with its process, so a demo that crashed or
was killed never wedges the next one; the pid written into the file is only there
to be named in the message.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from types import TracebackType
from typing import IO


@dataclass(frozen=True)
class Holder:
    """Who holds the lock, as the holder wrote it."""

    pid: int
    mode: str
    since: str

    def describe(self) -> str:
        return f"pid {self.pid} (mode {self.mode}, since {self.since})"


class DemoBusy(Exception):
    """Another demo holds the sandbox; the message names it and what to do."""

    def __init__(self, path: Path, holder: Holder | None) -> None:
        self.path = path
        self.holder = holder
        who = holder.describe() if holder else "a process that has not written its pid yet"
        super().__init__(
            f"another demo is running: {who} holds {path}. Two demos at once would reset "
            "each other's keyspaces; wait for it to finish, or pass --wait to queue behind it."
        )


class DemoLock:
    """The demo's lock file; use :meth:`acquire` and :meth:`release` or ``with``."""

    def __init__(self, path: Path, mode: str = "") -> None:
        self.path = path
        self.mode = mode
        self._handle: IO[str] | None = None

    @property
    def held(self) -> bool:
        return self._handle is not None

    def holder(self) -> Holder | None:
        """What the current holder wrote, or None (free, or not written yet)."""
        try:
            data = json.loads(self.path.read_text() or "null")
            return Holder(int(data["pid"]), str(data["mode"]), str(data["since"]))
        except (OSError, ValueError, TypeError, KeyError):
            return None

    def acquire(
        self,
        *,
        wait: bool = False,
        on_wait: Callable[[Holder | None], None] | None = None,
        poll_seconds: float = 1.0,
    ) -> None:
        """Take the lock, or raise :class:`DemoBusy` (``wait``: poll until it is free).

        Polling rather than a blocking ``flock`` keeps Ctrl-C working while queued;
        ``on_wait`` is told once who is ahead.
        """
        if self._handle is not None:
            raise RuntimeError(f"{self.path} is already held by this process")
        self.path.parent.mkdir(parents=True, exist_ok=True)
        handle = self.path.open("a+")
        told = False
        try:
            while not _try_flock(handle):
                holder = self.holder()
                if not wait:
                    raise DemoBusy(self.path, holder)
                if on_wait is not None and not told:
                    on_wait(holder)
                    told = True
                time.sleep(poll_seconds)
        except BaseException:
            handle.close()
            raise
        handle.seek(0)
        handle.truncate()
        since = datetime.now(UTC).isoformat(timespec="seconds")
        handle.write(json.dumps({"pid": os.getpid(), "mode": self.mode, "since": since}))
        handle.flush()
        self._handle = handle

    def release(self) -> None:
        """Empty the file (nobody holds it) and unlock; harmless if not held."""
        handle, self._handle = self._handle, None
        if handle is None:
            return
        with contextlib.suppress(OSError):
            handle.seek(0)
            handle.truncate()
        fcntl.flock(handle, fcntl.LOCK_UN)
        handle.close()

    def __enter__(self) -> DemoLock:
        if not self.held:
            self.acquire()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.release()


def _try_flock(handle: IO[str]) -> bool:
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True
