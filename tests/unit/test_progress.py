"""Progress lines: throttled, with rate and time left computed from an injected clock."""

from __future__ import annotations

from cdcgen.progress import Progress


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_logs_at_most_every_interval_with_rate_and_time_left() -> None:
    clock, lines = FakeClock(), []
    progress = Progress(total=800, unit="streams", log=lines.append, every=10, clock=clock)
    for _ in range(100):
        clock.now += 0.0625  # 100 streams in 6.25 s: below the interval, nothing logged
        progress.advance(rows=20)
    assert lines == []
    clock.now += 3.75
    progress.advance(rows=0)  # 101 streams, 2,000 rows after 10 s
    assert lines == [
        "streams 101/800 (12.6%), 2,000 rows, 200 rows/s, 10.1 streams/s, ~1 min 9 s left"
    ]


def test_finish_always_logs_the_total_and_duration() -> None:
    clock, lines = FakeClock(), []
    progress = Progress(total=None, unit="ranges", log=lines.append, clock=clock, label="publish")
    progress.advance(3)
    clock.now += 2
    assert progress.finish() == "publish: ranges 3, 1.5 ranges/s, done in 2 s"
    assert lines == ["publish: ranges 3, 1.5 ranges/s, done in 2 s"]


def test_long_durations_read_in_hours() -> None:
    clock, lines = FakeClock(), []
    progress = Progress(total=10, unit="windows", log=lines.append, every=0, clock=clock)
    clock.now += 3600
    progress.advance()
    assert lines[-1].endswith("~9 h 0 min left")
