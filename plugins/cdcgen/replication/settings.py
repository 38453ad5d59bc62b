"""Settings of replication that :class:`cdcgen.config.PipelineConfig` does not hold.

What only a replication run tunes, read from ``CDCGEN_REPLICATION_*`` variables: how
much of a backlog it holds at once (its memory bound) and how many writes it keeps in
flight.
"""

from __future__ import annotations

from pathlib import Path

from cdcgen.env_settings import EnvSettings, env


class ReplicationSettings(EnvSettings):
    #: Changes per time slice of a run (its memory bound: a slice is read, ordered and
    #: applied at once; a backlog of more is cut into slices, spilled to disk first).
    slice_rows: int = env("CDCGEN_REPLICATION_SLICE_ROWS", 200_000, ge=1)
    #: Changes turned into statements at a time within a slice.
    chunk_rows: int = env("CDCGEN_REPLICATION_CHUNK_ROWS", 20_000, ge=1)
    #: Requests in flight to the sink at once.
    concurrency: int = env("CDCGEN_REPLICATION_CONCURRENCY", 32, ge=1)
    #: CDC batches packed into one request (an unlogged batch of partitions of one
    #: replica), and about how many bytes of values it may carry: keep it under the
    #: sink's batch size limit (Cassandra refuses batches over 50 KiB by default,
    #: ScyllaDB over 1 MiB; a refused request is retried batch by batch).
    request_batches: int = env("CDCGEN_REPLICATION_REQUEST_BATCHES", 32, ge=1)
    request_bytes: int = env("CDCGEN_REPLICATION_REQUEST_BYTES", 32_768, ge=1)
    #: Where a run spills a backlog of several slices (default: the system's temp dir).
    spill_dir: Path | None = env("CDCGEN_REPLICATION_SPILL_DIR", None)
