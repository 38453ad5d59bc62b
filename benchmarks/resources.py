"""Peak memory and CPU time of a benchmark process and its children (the Spark JVM).

Wall time on a shared machine measures the neighbours too; CPU seconds beside it say
how much of a stage was this process's own work.
"""

from __future__ import annotations

import threading
from contextlib import suppress

import psutil


class MemorySampler:
    """Peak RSS of this process plus all its children, sampled in a thread."""

    def __init__(self, interval: float = 0.1) -> None:
        self.interval = interval
        self.peak_total = 0
        self.peak_children = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        me = psutil.Process()
        while not self._stop.is_set():
            try:
                children = sum(c.memory_info().rss for c in me.children(recursive=True))
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


def cpu_time() -> float:
    """CPU seconds (user + system) of this process and its live children."""
    me = psutil.Process()
    total = sum(me.cpu_times()[:2])
    for child in me.children(recursive=True):
        with suppress(psutil.Error):
            total += sum(child.cpu_times()[:2])
    return total
