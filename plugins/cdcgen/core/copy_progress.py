"""How far a bootstrap's copy has got, and what a resumed copy still has to do (pure).

A bootstrap copies the source table token range by token range
(:mod:`cdcgen.core.snapshot_copy` says how each row is copied). A copy of hundreds of
gigabytes runs for hours, so it records on the sink each range whose rows are all
acknowledged, and a copy that was killed resumes instead of starting again:

* with the **same snapshot time** ``S`` the first attempt fixed, since the sink's
  consistency point must be the time the copied cells were read against: a later ``S``
  would claim changes between the two that the ranges copied first never saw;
* copying **only the token ranges not recorded**: the ring in ranges (cut at the ring's
  tokens, split to the configured count), less every recorded range. Recorded ranges
  are subtracted as intervals, so the rule holds even if the ring moved between the
  attempts and today's ranges no longer line up with the recorded ones;
* **truncating only before the first range is recorded**: a copy that planned to
  replace the sink's rows truncates again if it was killed before any range was done
  (nothing copied is lost), never after (that would erase recorded ranges).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime

from cdcgen.core.token_ranges import TokenRange


@dataclass(frozen=True)
class CopiedRange:
    """A token range whose rows the sink acknowledged, and how many there were."""

    tokens: TokenRange
    rows: int
    run_id: str = ""


@dataclass(frozen=True)
class CopyProgress:
    """An unfinished copy as the sink records it: its snapshot time, whether it replaces
    the sink's rows, who started it, and the ranges done so far."""

    snapshot_at: datetime
    truncate: bool
    run_id: str = ""
    done: tuple[CopiedRange, ...] = ()

    @property
    def rows(self) -> int:
        """Rows copied by the recorded ranges."""
        return sum(r.rows for r in self.done)

    @property
    def truncates_now(self) -> bool:
        """Whether the sink table is truncated (again) before copying: only while no
        range is recorded."""
        return self.truncate and not self.done

    def remaining(self, ranges: Sequence[TokenRange]) -> list[TokenRange]:
        """``ranges`` (the ring today) less every recorded range, in order."""
        return uncovered(ranges, (r.tokens for r in self.done))


def uncovered(ranges: Sequence[TokenRange], done: Iterable[TokenRange]) -> list[TokenRange]:
    """The parts of ``ranges`` that no range of ``done`` covers, in ring order.

    A range partly covered leaves its uncovered pieces, each within the original range
    (so within one primary replica's share of the ring)."""
    covered = sorted(done)
    out: list[TokenRange] = []
    for whole in ranges:
        low = whole.low
        for piece in covered:
            if piece.high <= low or piece.low >= whole.high:
                continue
            if piece.low > low:
                out.append(TokenRange(low, piece.low))
            low = max(low, piece.high)
            if low >= whole.high:
                break
        if low < whole.high:
            out.append(TokenRange(low, whole.high))
    return out
