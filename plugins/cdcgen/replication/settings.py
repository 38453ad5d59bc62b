"""Settings of replication that :class:`cdcgen.config.PipelineConfig` does not hold.

What only a replication run tunes, read from ``CDCGEN_REPLICATION_*`` variables: how
much of a backlog it holds at once (its memory bound), how many writes it keeps in
flight, and how a bootstrap's copy cuts the ring (its unit of resumption) and pages.
"""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

from cdcgen.env_settings import EnvSettings, env


class ReplicationSettings(EnvSettings):
    slice_rows: int = env("CDCGEN_REPLICATION_SLICE_ROWS", 200_000, ge=1)
    """Changes per time slice of a run (its memory bound: a slice is read, ordered and
    applied at once; a backlog of more is cut into slices, spilled to disk first)."""
    chunk_rows: int = env("CDCGEN_REPLICATION_CHUNK_ROWS", 20_000, ge=1)
    """Changes turned into statements at a time within a slice."""
    concurrency: int = env("CDCGEN_REPLICATION_CONCURRENCY", 32, ge=1)
    """Requests in flight to the sink at once."""
    request_batches: int = env("CDCGEN_REPLICATION_REQUEST_BATCHES", 32, ge=1)
    """CDC batches packed into one request (an unlogged batch of partitions of one
    replica)."""
    request_bytes: int = env("CDCGEN_REPLICATION_REQUEST_BYTES", 32_768, ge=1)
    """About how many bytes of values one request may carry: keep it under the sink's
    batch size limit (Cassandra refuses batches over 50 KiB by default, ScyllaDB over
    1 MiB; a refused request is retried batch by batch)."""
    add_columns: bool = env("CDCGEN_REPLICATION_ADD_COLUMNS", True)
    """Whether a run adds to the sink table the columns added to the source table since
    (``ALTER TABLE ... ADD``, :mod:`cdcgen.replication.sink_columns`); off, such a
    sink is refused by name until its columns are added by hand."""
    apply_tasks: int = env("CDCGEN_REPLICATION_APPLY_TASKS", 0, ge=0)
    """Spark tasks each slice is spread over by partition key (0: the run applies in its
    own process). The tasks run on the run's Spark (``CDCGEN_SPARK_MASTER``: local
    cores, or a cluster's executors), each with its own sink session and requests."""
    spill_dir: Path | None = env("CDCGEN_REPLICATION_SPILL_DIR", None)
    """Where a run spills a backlog of several slices (unset: the system's temp dir)."""
    copy_splits: int = env("CDCGEN_REPLICATION_COPY_SPLITS", 256, ge=1, le=1_000_000)
    """Token ranges a bootstrap's copy cuts the ring into, at least: each is recorded on
    the sink once copied, so a killed copy resumes with the ranges not recorded (more
    ranges: less copied again after a kill, more state rows). Spark tasks take several."""
    copy_page_rows: int = env("CDCGEN_REPLICATION_COPY_PAGE_ROWS", 2_000, ge=1)
    """Rows per page of the copy's source scan (the driver's fetch size)."""
    follow_every: timedelta = env(
        "CDCGEN_REPLICATION_FOLLOW_EVERY_SECONDS", timedelta(seconds=10), gt=timedelta(0)
    )
    """In a follow (the replication DAG's continuous mode), how often a cycle applies
    what the lake's watermark passed since the last."""
    copy_concurrency: int = env("CDCGEN_REPLICATION_COPY_CONCURRENCY", 256, ge=1)
    """Writes in flight to the sink per Spark task of the copy. A copy writes one small
    batch per row, so the sink is kept busy only with many in flight; lower it for a
    sink that serves traffic meanwhile (tasks run at once: one per executor core)."""
    request_timeout: timedelta = env(
        "CDCGEN_REPLICATION_REQUEST_TIMEOUT_SECONDS", timedelta(seconds=30)
    )
    """The copy's request timeout, per page read and per write."""
