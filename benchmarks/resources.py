"""Peak memory and CPU time of a benchmark process and its children (the Spark JVM), and
of a server it uses.

Wall time on a shared machine measures the neighbours too; CPU seconds beside it say
how much of a stage was this process's own work.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from contextlib import suppress

import psutil


class MemorySampler:
    """Peak RSS of this process plus all its children, and of the processes ``also``
    names with theirs (a server the benchmark uses, such as Spark Connect's), sampled in
    a thread. ``peak_children`` is all but this process."""

    def __init__(self, interval: float = 0.1, also: Sequence[int] = ()) -> None:
        self.interval = interval
        self.also = tuple(also)
        self.peak_total = 0
        self.peak_children = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        me = psutil.Process()
        while not self._stop.is_set():
            try:
                children = sum(p.memory_info().rss for p in _family(me, self.also))
                total = me.memory_info().rss + children
            except psutil.Error:
                continue
            self.peak_children = max(self.peak_children, children)
            self.peak_total = max(self.peak_total, total)
            self._stop.wait(self.interval)

    def __enter__(self) -> MemorySampler:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join()


def cpu_time(also: Sequence[int] = ()) -> float:
    """CPU seconds (user + system) of this process, its live children and the processes
    ``also`` names with theirs."""
    me = psutil.Process()
    total = sum(me.cpu_times()[:2])
    for child in _family(me, also):
        with suppress(psutil.Error):
            total += sum(child.cpu_times()[:2])
    return total


def _family(me: psutil.Process, also: Sequence[int]) -> list[psutil.Process]:
    """``me``'s descendants, and each of ``also`` with its descendants."""
    found = me.children(recursive=True)
    for pid in also:
        other = psutil.Process(pid)
        found += [other, *other.children(recursive=True)]
    return found
