"""Settings of the changes pipeline that :class:`cdcgen.config.PipelineConfig` does not hold.

The shared config keeps what every part of the project needs (nodes, target keyspace,
lake, leeway, confidence window). What only change extraction tunes lives here, read
from ``CDCGEN_CHANGES_*`` environment variables, so one typed object reaches the Spark
tasks instead of a dozen loose arguments.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import timedelta
from enum import StrEnum
from typing import Any

from cdcgen.config import ConfigError


class LogPartitioner(StrEnum):
    """How the cluster places a CDC log partition on the ring.

    ``cdc``: ScyllaDB's ``CDCPartitioner``, the token is the first 8 bytes of the stream
    ID. ``murmur3``: the log table is an ordinary table hashed like any other (the
    sandbox on Apache Cassandra). ``auto`` asks the cluster (``system_schema.scylla_tables``).
    """

    AUTO = "auto"
    CDC = "cdc"
    MURMUR3 = "murmur3"


_CONSISTENCY = ("ONE", "LOCAL_ONE", "QUORUM", "LOCAL_QUORUM", "ALL")


@dataclass(frozen=True)
class ChangesSettings:
    # Reads
    page_size: int = 5000
    request_timeout: timedelta = timedelta(seconds=30)
    max_attempts: int = 6
    backoff_base: timedelta = timedelta(milliseconds=200)
    backoff_max: timedelta = timedelta(seconds=20)
    read_consistency: str = "QUORUM"
    log_partitioner: LogPartitioner = LogPartitioner.AUTO
    # Distribution: streams per Spark task (tasks never mix primary replicas), and at
    # least this many tasks (0: twice Spark's default parallelism).
    streams_per_task: int = 256
    min_tasks: int = 0
    # Lake: streams are hashed into this many buckets per generation; a bucket is the
    # unit a re-run or a resume replaces. Recorded in the lake on first write.
    buckets: int = 8
    # Buckets per Spark job (0 = all in one job). Smaller means a kill loses less work.
    buckets_per_job: int = 0
    # Arrow record batch size yielded by the read tasks.
    batch_rows: int = 20_000
    # Expiry: the CDC TTL when the cluster does not say; refuse windows starting
    # within ``expiry_margin`` of it (rows would expire while being read).
    default_cdc_ttl: timedelta = timedelta(seconds=86_400)
    expiry_margin: timedelta = timedelta(seconds=60)
    # Row checks: count each stream's window on the source (one COUNT per stream).
    verify_source_counts: bool = True

    def __post_init__(self) -> None:
        for name in ("page_size", "max_attempts", "streams_per_task", "buckets", "batch_rows"):
            if getattr(self, name) < 1:
                raise ConfigError(f"CDCGEN_CHANGES_{name.upper()} must be at least 1")
        if self.buckets_per_job < 0 or self.min_tasks < 0:
            raise ConfigError(
                "CDCGEN_CHANGES_BUCKETS_PER_JOB and CDCGEN_CHANGES_MIN_TASKS must be >= 0"
            )
        if self.read_consistency not in _CONSISTENCY:
            raise ConfigError(
                f"CDCGEN_CHANGES_READ_CONSISTENCY={self.read_consistency!r}: expected one of "
                + ", ".join(_CONSISTENCY)
            )
        if not isinstance(self.log_partitioner, LogPartitioner):
            object.__setattr__(self, "log_partitioner", _partitioner(str(self.log_partitioner)))

    def with_overrides(self, **changes: Any) -> ChangesSettings:
        return replace(self, **changes)

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> ChangesSettings:
        env = os.environ if env is None else env
        base = cls()
        values: dict[str, Any] = {}
        for name in (
            "page_size",
            "max_attempts",
            "streams_per_task",
            "buckets",
            "buckets_per_job",
            "batch_rows",
            "min_tasks",
        ):
            raw = env.get(f"CDCGEN_CHANGES_{name.upper()}")
            if raw:
                try:
                    values[name] = int(raw)
                except ValueError:
                    raise ConfigError(
                        f"CDCGEN_CHANGES_{name.upper()}={raw!r}: expected an integer"
                    ) from None
        for name in (
            "request_timeout",
            "backoff_base",
            "backoff_max",
            "default_cdc_ttl",
            "expiry_margin",
        ):
            raw = env.get(f"CDCGEN_CHANGES_{name.upper()}_SECONDS")
            if raw:
                try:
                    values[name] = timedelta(seconds=float(raw))
                except ValueError:
                    raise ConfigError(
                        f"CDCGEN_CHANGES_{name.upper()}_SECONDS={raw!r}: expected seconds"
                    ) from None
        if raw := env.get("CDCGEN_CHANGES_READ_CONSISTENCY"):
            values["read_consistency"] = raw.upper()
        if raw := env.get("CDCGEN_CHANGES_LOG_PARTITIONER"):
            values["log_partitioner"] = _partitioner(raw)
        if raw := env.get("CDCGEN_CHANGES_VERIFY_SOURCE_COUNTS"):
            values["verify_source_counts"] = raw.strip().lower() in ("1", "true", "yes", "on")
        return replace(base, **values)


def _partitioner(raw: str) -> LogPartitioner:
    try:
        return LogPartitioner(raw.strip().lower())
    except ValueError:
        choices = ", ".join(p.value for p in LogPartitioner)
        raise ConfigError(
            f"CDCGEN_CHANGES_LOG_PARTITIONER={raw!r}: expected one of {choices}"
        ) from None
