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
    # Reads
    page_size: int = env("CDCGEN_CHANGES_PAGE_SIZE", 5000, ge=1)
    request_timeout: timedelta = env(
        "CDCGEN_CHANGES_REQUEST_TIMEOUT_SECONDS", timedelta(seconds=30)
    )
    max_attempts: int = env("CDCGEN_CHANGES_MAX_ATTEMPTS", 6, ge=1)
    backoff_base: timedelta = env(
        "CDCGEN_CHANGES_BACKOFF_BASE_SECONDS", timedelta(milliseconds=200)
    )
    backoff_max: timedelta = env("CDCGEN_CHANGES_BACKOFF_MAX_SECONDS", timedelta(seconds=20))
    read_consistency: Consistency = env("CDCGEN_CHANGES_READ_CONSISTENCY", "QUORUM")
    log_partitioner: LogPartitioner = env("CDCGEN_CHANGES_LOG_PARTITIONER", LogPartitioner.AUTO)
    # Strategy per job (cdcgen.core.read_strategy): one query per stream, token-range
    # scans, or auto: scans from ``ranges_from`` stream reads in a job on.
    read_strategy: ReadStrategy = env("CDCGEN_CHANGES_READ", ReadStrategy.AUTO)
    ranges_from: int = env("CDCGEN_CHANGES_RANGES_FROM", 1024, ge=1)
    # Distribution: streams per Spark task (tasks never mix primary replicas), and at
    # least this many tasks (0: twice Spark's default parallelism).
    streams_per_task: int = env("CDCGEN_CHANGES_STREAMS_PER_TASK", 256, ge=1)
    min_tasks: int = env("CDCGEN_CHANGES_MIN_TASKS", 0, ge=0)
    # Lake: streams fall into this many buckets (slices of the ring) per generation; a
    # bucket is the unit a re-run or a resume replaces. Recorded in the lake on first write.
    buckets: int = env("CDCGEN_CHANGES_BUCKETS", 8, ge=1)
    # Buckets per Spark job (0 = all in one job). Smaller means a kill loses less work.
    buckets_per_job: int = env("CDCGEN_CHANGES_BUCKETS_PER_JOB", 0, ge=0)
    # Arrow record batch size yielded by the read tasks.
    batch_rows: int = env("CDCGEN_CHANGES_BATCH_ROWS", 20_000, ge=1)
    # Expiry: refuse windows starting within ``expiry_margin`` of the table's CDC TTL
    # (rows would expire while being read).
    expiry_margin: timedelta = env("CDCGEN_CHANGES_EXPIRY_MARGIN_SECONDS", timedelta(seconds=60))
    # Row checks: count each stream's window on the source (one COUNT per stream).
    verify_source_counts: bool = env("CDCGEN_CHANGES_VERIFY_SOURCE_COUNTS", True)

    @field_validator("read_consistency", mode="before")
    @classmethod
    def _upper(cls, value: Any) -> Any:
        return value.strip().upper() if isinstance(value, str) else value

    @field_validator("log_partitioner", "read_strategy", mode="before")
    @classmethod
    def _lower(cls, value: Any) -> Any:
        return value.strip().lower() if isinstance(value, str) else value
