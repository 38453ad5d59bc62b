"""Progress lines for long loops: done/total, rows, rate and time left, every few seconds.

A task that reads thousands of streams or publishes thousands of ranges should say
where it is in its log, not only when it ends; Airflow shows task logs live.  Pure
(a clock and a log function are injected), so it is tested without sleeping::

    progress = Progress(total=len(streams), unit="streams", log=log.info)
    for stream in streams:
        rows = read(stream)
        progress.advance(rows=rows)
    progress.finish()

logs at most once per ``every`` seconds, e.g.
``streams 120/768 (15.6%), 12,345 rows, 2,048 rows/s, 5.9 streams/s, ~1 min 50 s left``.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field


def _duration(seconds: float) -> str:
    seconds = max(0, round(seconds))
    if seconds < 60:
        return f"{seconds} s"
    minutes, secs = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes} min {secs} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes} min"


@dataclass
class Progress:
    total: int | None
    unit: str = "items"
    log: Callable[[str], object] = print
    every: float = 10.0
    clock: Callable[[], float] = time.monotonic
    label: str = ""
    done: int = 0
    rows: int = 0
    _started: float = field(default=0.0, init=False)
    _last: float = field(default=0.0, init=False)

    def __post_init__(self) -> None:
        self._started = self._last = self.clock()

    def advance(self, count: int = 1, rows: int = 0) -> None:
        """Count ``count`` more units (and ``rows``); log if ``every`` seconds have passed."""
        self.done += count
        self.rows += rows
        now = self.clock()
        if now - self._last >= self.every:
            self._last = now
            self.log(self.line(now))

    def finish(self) -> str:
        """Log and return the final line (always, however short the loop was)."""
        line = self.line(self.clock(), final=True)
        self.log(line)
        return line

    def line(self, now: float, final: bool = False) -> str:
        elapsed = max(now - self._started, 1e-9)
        head = f"{self.label}: " if self.label else ""
        if self.total:
            parts = [
                f"{self.unit} {self.done:,}/{self.total:,} ({100 * self.done / self.total:.1f}%)"
            ]
        else:
            parts = [f"{self.unit} {self.done:,}"]
        if self.rows:
            parts.append(f"{self.rows:,} rows, {self.rows / elapsed:,.0f} rows/s")
        parts.append(f"{self.done / elapsed:,.1f} {self.unit}/s")
        if final:
            parts.append(f"done in {_duration(elapsed)}")
        elif self.total and self.done:
            left = (self.total - self.done) * elapsed / self.done
            parts.append(f"~{_duration(left)} left")
        return head + ", ".join(parts)
