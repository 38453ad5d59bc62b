"""Settings of the changes pipeline that :class:`cdcgen.config.PipelineConfig` does not hold.

The shared config keeps what every part of the project needs (nodes, target keyspace,
lake, leeway, confidence window). What only change extraction tunes lives here, read
from ``CDCGEN_CHANGES_*`` environment variables, so one typed object reaches the Spark
tasks instead of a dozen loose arguments.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any, Literal

from pydantic import field_validator

from cdcgen.core.cdc_log import LogPartitioner
from cdcgen.core.read_strategy import ReadStrategy
from cdcgen.env_settings import EnvSettings, env

Consistency = Literal["ONE", "LOCAL_ONE", "QUORUM", "LOCAL_QUORUM", "ALL"]


class ChangesSettings(EnvSettings):
    page_size: int = env("CDCGEN_CHANGES_PAGE_SIZE", 5000, ge=1)
    """Rows per page of a read of the CDC log (the driver's fetch size)."""
    request_timeout: timedelta = env(
        "CDCGEN_CHANGES_REQUEST_TIMEOUT_SECONDS", timedelta(seconds=30)
    )
    """The timeout of each request reading the log."""
    max_attempts: int = env("CDCGEN_CHANGES_MAX_ATTEMPTS", 6, ge=1)
    """Tries of a read that fails transiently before its task fails."""
    backoff_base: timedelta = env(
        "CDCGEN_CHANGES_BACKOFF_BASE_SECONDS", timedelta(milliseconds=200)
    )
    """The longest first wait before a read is tried again (the ceiling doubles with each
    try; each wait is drawn at random below it)."""
    backoff_max: timedelta = env("CDCGEN_CHANGES_BACKOFF_MAX_SECONDS", timedelta(seconds=20))
    """The ceiling of the wait between two tries of a read."""
    read_consistency: Consistency = env("CDCGEN_CHANGES_READ_CONSISTENCY", "QUORUM")
    """The consistency level of the log reads (ONE, LOCAL_ONE, QUORUM, LOCAL_QUORUM or
    ALL): below QUORUM a read may miss a change a replica has not received yet, and the
    window is then written without it."""
    log_partitioner: LogPartitioner = env("CDCGEN_CHANGES_LOG_PARTITIONER", LogPartitioner.AUTO)
    """How the cluster places a log partition on the ring: ``cdc`` (ScyllaDB's),
    ``murmur3`` (a log table kept by Apache Cassandra), or ``auto``: ask the cluster."""
    read_strategy: ReadStrategy = env("CDCGEN_CHANGES_READ", ReadStrategy.AUTO)
    """How a job reads (:mod:`cdcgen.core.read_strategy`): ``streams``, one query per
    stream; ``ranges``, token-range scans of the log; ``auto``, scans from
    ``CDCGEN_CHANGES_RANGES_FROM`` stream reads in a job on."""
    ranges_from: int = env("CDCGEN_CHANGES_RANGES_FROM", 1024, ge=1)
    """Stream reads in a job from which ``auto`` scans token ranges instead."""
    streams_per_task: int = env("CDCGEN_CHANGES_STREAMS_PER_TASK", 256, ge=1)
    """Streams per Spark task (a task never mixes primary replicas)."""
    min_tasks: int = env("CDCGEN_CHANGES_MIN_TASKS", 0, ge=0)
    """Spark tasks per job at least (0: twice Spark's default parallelism)."""
    buckets: int = env("CDCGEN_CHANGES_BUCKETS", 8, ge=1)
    """Buckets (slices of the ring) a generation's streams fall into in the lake; a
    bucket is the unit a re-run or a resume replaces. Recorded in the lake on first
    write: a lake keeps the count it was first written with."""
    buckets_per_job: int = env("CDCGEN_CHANGES_BUCKETS_PER_JOB", 0, ge=0)
    """Buckets per Spark job (0: all in one job); fewer means a kill loses less work."""
    batch_rows: int = env("CDCGEN_CHANGES_BATCH_ROWS", 20_000, ge=1)
    """Rows per Arrow record batch the read tasks yield."""
    expiry_margin: timedelta = env("CDCGEN_CHANGES_EXPIRY_MARGIN_SECONDS", timedelta(seconds=60))
    """A window starting within this much of the table's CDC TTL is refused: its rows
    would expire while being read."""
    verify_source_counts: bool = env("CDCGEN_CHANGES_VERIFY_SOURCE_COUNTS", True)
    """Whether the row checks count each stream's window on the source (one COUNT per
    stream and window) and compare the lake's rows with it."""
    follow_every: timedelta = env(
        "CDCGEN_CHANGES_FOLLOW_EVERY_SECONDS", timedelta(seconds=10), gt=timedelta(0)
    )
    """In a follow (the changes DAG's continuous mode), how often a cycle starts: each
    reads the windows closed since the last one, so a change waits for at most one
    period beyond the confidence window and the leeway."""

    @field_validator("read_consistency", mode="before")
    @classmethod
    def _upper(cls, value: Any) -> Any:
        return value.strip().upper() if isinstance(value, str) else value

    @field_validator("log_partitioner", "read_strategy", mode="before")
    @classmethod
    def _lower(cls, value: Any) -> Any:
        return value.strip().lower() if isinstance(value, str) else value
