"""How a changes job reads the log: one query per stream, or token-range scans.

The two strategies cost differently (measured by ``benchmarks/bench_changes.py``):

* ``streams``: one single-partition query per stream per window. Each query costs a
  round trip and a Spark-side read setup whatever its rows, so a job's cost grows with
  streams x windows: with thousands of streams it runs at a small fraction of a raw
  scan's speed over the same rows, and comes close to it only with few streams.
* ``ranges``: a scan of the whole ring in token ranges, restricted server-side to the
  job's time span, every row then assigned to its planned window on the client. Its
  cost grows with the rows in the time span, not with the streams; but it reads the
  rows of *every* stream of that span, so a job that covers only some of a
  generation's buckets (``CDCGEN_CHANGES_BUCKETS_PER_JOB``) would read and drop the
  others' rows.

Hence the rule (:func:`choose_read`): ``auto`` scans when the job has at least
``ranges_from`` stream reads and covers at least half of its generations' buckets
(so at most half of what it reads is dropped), and when no stream has two overlapping
windows in the job (a scanned row must go to one window only; the planner never makes
overlapping ones, this only guards the invariant).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum

#: The least share of its generations' buckets a job must cover for ``auto`` to scan.
MIN_BUCKET_SHARE = 0.5


class ReadStrategy(StrEnum):
    AUTO = "auto"
    STREAMS = "streams"
    RANGES = "ranges"


@dataclass(frozen=True)
class JobShape:
    """What the rule needs to know of one job."""

    stream_reads: int
    buckets_read: int  # distinct (generation, bucket) pairs in the job
    buckets_total: int  # generations in the job x the lake's buckets
    disjoint: bool  # no stream has two overlapping windows in the job

    @property
    def bucket_share(self) -> float:
        return self.buckets_read / self.buckets_total if self.buckets_total else 0.0


def choose_read(setting: ReadStrategy, job: JobShape, ranges_from: int) -> ReadStrategy:
    """The strategy of one job: the setting unless ``auto`` (see the module doc).

    A forced ``ranges`` still falls back to ``streams`` when windows overlap: a
    scan could not place such rows exactly."""
    if not job.disjoint or job.stream_reads == 0:
        return ReadStrategy.STREAMS
    if setting is not ReadStrategy.AUTO:
        return setting
    if job.stream_reads >= ranges_from and job.bucket_share >= MIN_BUCKET_SHARE:
        return ReadStrategy.RANGES
    return ReadStrategy.STREAMS


def job_shape(
    generations_and_buckets: Iterable[tuple[str, int]],
    stream_reads: int,
    buckets: int,
    *,
    disjoint: bool,
) -> JobShape:
    """A job's shape from its windows' ``(generation label, bucket)`` pairs."""
    pairs = set(generations_and_buckets)
    generations = {generation for generation, _ in pairs}
    return JobShape(stream_reads, len(pairs), len(generations) * buckets, disjoint)
