"""The demo leaves no process behind that it started, however it ends.

``airflow dags test`` runs in its own session (so a timeout can end its spark-submit
and JVMs as one process group), which also means Ctrl-C in the terminal does not
reach it: without care an interrupted demo leaves Airflow and Spark running, still
writing to the sandbox the next demo resets. So on the way out every child's process
group is ended, then anything still descending from the demo; SIGTERM and SIGHUP are
turned into KeyboardInterrupt so that path runs for them too.

A Cassandra node the demo started is a child as well, but it is shared through the
sandbox's leases: :class:`~cdcgen_dev.cassandra.SandboxUser` stops it when nobody else
uses it, and ``keep`` names the nodes that must stay.
"""

from __future__ import annotations

import contextlib
import os
import signal
from collections.abc import Callable, Collection, Iterator
from types import FrameType

import psutil

#: How long children get to exit on SIGTERM before SIGKILL.
GRACE_SECONDS = 10.0


def _interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt(f"signal {signal.Signals(signum).name}")


@contextlib.contextmanager
def no_process_left_behind(keep: Callable[[], Collection[int]] = frozenset) -> Iterator[None]:
    """Run the block; afterwards end every process it started except ``keep()``'s pids.

    ``keep`` is called on the way out (which sandbox nodes still run is only known then).
    """
    handled = (signal.SIGTERM, signal.SIGHUP)
    previous = {signum: signal.signal(signum, _interrupt) for signum in handled}
    try:
        yield
    finally:
        try:
            end_children(set(keep()))
        finally:
            for signum, handler in previous.items():
                signal.signal(signum, handler)


def end_children(keep: Collection[int] = ()) -> list[int]:
    """SIGTERM each child's process group and every descendant, SIGKILL what stays.

    A process group is signalled only when it is not the demo's own and holds no
    pid of ``keep``. Returns the pids it found still running.
    """
    me = psutil.Process()
    own_group = os.getpgrp()
    victims = [p for p in me.children(recursive=True) if p.pid not in keep]
    groups = {_group(p.pid) for p in me.children() if p.pid not in keep} - {own_group, None}
    groups -= {_group(pid) for pid in keep}
    for group in groups:
        _signal_group(group, signal.SIGTERM)
    for process in victims:
        with contextlib.suppress(psutil.Error):
            process.terminate()
    _, alive = psutil.wait_procs(victims, timeout=GRACE_SECONDS)
    for group in groups:  # also what left the tree (orphans of a parent that exited first)
        _signal_group(group, signal.SIGKILL)
    for process in alive:
        with contextlib.suppress(psutil.Error):
            process.kill()
    return [p.pid for p in victims]


def _group(pid: int) -> int | None:
    try:
        return os.getpgid(pid)
    except ProcessLookupError:
        return None


def _signal_group(group: int | None, signum: int) -> None:
    if group is None:
        return
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(group, signum)
