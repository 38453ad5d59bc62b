"""One typed configuration object for every task, job and command.

Values come from ``CDCGEN_*`` environment variables (docker-compose and the Airflow
deployment set them, a task hands them to the Spark jobs it starts) over defaults that
describe a real ScyllaDB cluster: its own keyspace names, every node's clock read over
CQL, publication into ``system_distributed``. A development sandbox sets its own values
explicitly. Callers override single fields with :meth:`PipelineConfig.with_overrides`
(Airflow Params do that); passing this one object replaces long argument lists.

Parsing and validation are pydantic's: each field declares the variable it is read
from, and a bad value is a :class:`ConfigError` naming that variable. (pydantic-settings'
``BaseSettings`` is not used: it reads ``os.environ`` on every construction, while the
pipeline builds configurations from a connection merged over an environment, and tests
build them from explicit values; one explicit ``from_env(mapping)`` serves both.)
"""

from __future__ import annotations

import os
from datetime import timedelta
from pathlib import Path
from typing import Annotated, Any, ClassVar, Literal

from pydantic import BeforeValidator, Field, field_validator

from cdcgen.access_settings import AccessSettings
from cdcgen.core.generation import SourceMode
from cdcgen.core.identifiers import (
    SCYLLA_DISTRIBUTED,
    STATE_KEYSPACE_SETTING,
    check_writable_keyspace,
)
from cdcgen.core.lake_uri import lake_uri
from cdcgen.env_settings import EnvSettings as EnvSettings
from cdcgen.env_settings import env as env
from cdcgen.env_settings import env_text as env_text
from cdcgen.extensions import clock_sources
from cdcgen.schema import SourceSchema

#: Where the lake and the reports go when no setting names them: the user's data folder
#: (``$XDG_DATA_HOME``, else ``~/.local/share``), never a path derived from where the
#: package is installed (a wheel's site-packages). ``expanduser`` rather than
#: ``Path.home()``: a process without a home must still import the configuration. A
#: deployment with more than one worker sets ``CDCGEN_LAKE_PATH`` to shared storage.
DATA_HOME = Path(os.environ.get("XDG_DATA_HOME") or os.path.expanduser("~/.local/share")) / "cdcgen"
#: Run records the report site keeps (``CDCGEN_REPORT_KEEP_RUNS``): about a month of a
#: changes run every hour; the oldest beyond are removed as a task records its run.
DEFAULT_REPORT_KEEP_RUNS = 1000


class PipelineConfig(EnvSettings):
    contact_points: tuple[str, ...] = env(
        "CDCGEN_CONTACT_POINTS", ("127.0.0.1",), connection="host"
    )
    """The nodes the driver first contacts (comma-separated); it finds the others."""
    port: int = env("CDCGEN_PORT", 9042, ge=1, le=65535, connection="port")
    """The nodes' CQL port."""
    protocol_version: int | None = env(
        "CDCGEN_PROTOCOL_VERSION", None, ge=3, le=5, connection="extra.protocol_version"
    )
    """Native protocol version; unset, the driver negotiates (ScyllaDB serves v4)."""
    source_mode: SourceMode = env(
        "CDCGEN_SOURCE_MODE", SourceMode.RAFT, connection="extra.source_mode"
    )
    """How the source stores its generations: raft, gossip, v1 or tablets."""
    source_keyspace_prefix: str = env(
        "CDCGEN_SOURCE_KEYSPACE_PREFIX", "", connection="extra.source_keyspace_prefix"
    )
    """Empty reads ScyllaDB's own ``system*`` keyspaces; a prefix reads copies of them
    (a sandbox)."""
    clock_source: str = env("CDCGEN_CLOCK_SOURCE", "cql", connection="extra.clock_source")
    """How node clocks are read: ``cql`` asks each node for ``now()``; other sources are
    plugins (entry point group ``cdcgen.clock_readers``)."""
    target_keyspace: str = env("CDCGEN_TARGET_KEYSPACE", SCYLLA_DISTRIBUTED)
    """Where generations are published; no other ``system``/``system_*`` keyspace is
    accepted."""
    state_keyspace: str | None = env(STATE_KEYSPACE_SETTING, None)
    """The changes pipeline's checkpoints and watermark; unset, the target keyspace
    (which then may not be ``system_distributed``: no tables of ours go there)."""
    lake_path: Annotated[str, BeforeValidator(lake_uri)] = env(
        "CDCGEN_LAKE_PATH", lake_uri(DATA_HOME / "lake"), connection="extra.lake_path"
    )
    """The lake: a folder, or ``s3://bucket/prefix`` (reached with the ``AWS_*``
    settings or the ``cdcgen_lake`` connection). A second cluster's connection names its
    own."""
    lake_roots: tuple[str, ...] = env("CDCGEN_LAKE_ROOTS", ())
    """Further lakes a run's ``lake_path`` Param may name (comma-separated folders or
    s3:// prefixes), besides the configured lake and what lies under it."""
    report_dir: Path = env(
        "CDCGEN_REPORT_DIR", DATA_HOME / "reports", connection="extra.report_dir"
    )
    """Where the report site, its run records, the jobs' result files and the runs'
    summaries are written. A second cluster's connection names its own."""
    report_keep_runs: int = env("CDCGEN_REPORT_KEEP_RUNS", DEFAULT_REPORT_KEEP_RUNS, ge=1)
    """Run records the report site keeps, the oldest removed as a run is recorded; also
    replication records per sink table."""
    ring_delay: timedelta = env(
        "CDCGEN_RING_DELAY_SECONDS", timedelta(seconds=30), connection="extra.ring_delay_seconds"
    )
    """The source's ``ring_delay``: a generation starts twice this after it is made."""
    generation_leeway: timedelta = env(
        "CDCGEN_LEEWAY_SECONDS", timedelta(seconds=5), connection="extra.leeway_seconds"
    )
    """How far past a generation's start every node's clock must be before it is read."""
    confidence_window: timedelta = env(
        "CDCGEN_CONFIDENCE_WINDOW_SECONDS",
        timedelta(seconds=30),
        connection="extra.confidence_window_seconds",
    )
    """How far past a window's end every clock must be before its changes are read: a
    write may arrive that late (its timestamp is the client's)."""
    clock_wait_timeout: timedelta = env(
        "CDCGEN_CLOCK_WAIT_TIMEOUT_SECONDS",
        timedelta(minutes=10),
        connection="extra.clock_wait_timeout_seconds",
    )
    """How long a clock wait may last before its task fails."""
    prune_expired_after: timedelta | None = env("CDCGEN_PRUNE_EXPIRED_AFTER_SECONDS", None)
    """Unset: expired generations keep their description rows (ScyllaDB's behaviour).
    Set: the maintenance DAG deletes them this long after they expired."""
    publish_concurrency: int = env("CDCGEN_PUBLISH_CONCURRENCY", 8, ge=1)
    """Batches of description rows in flight while a generation is published."""
    validation_engine: Literal["auto", "sql", "spark"] = env("CDCGEN_VALIDATION_ENGINE", "auto")
    """Which engine flags a generation's rows before GX checks them: ``sql`` (SQLite,
    in-process, no JVM), ``spark``, or ``auto``: SQLite up to
    ``CDCGEN_VALIDATION_SQL_MAX_STREAMS`` streams, Spark above."""
    validation_sql_max_streams: int = env("CDCGEN_VALIDATION_SQL_MAX_STREAMS", 200_000, ge=0)
    """The most streams ``auto`` validation flags with SQLite."""
    alert_lag: timedelta | None = env("CDCGEN_ALERT_LAG_SECONDS", None)
    """How far a table may lag before its run fails, named, and the DAG's notifier
    tells: behind its watermark (the changes DAG) or its sink behind the source (the
    replication DAG); checked by the DAGs' ``check_lag`` task (docs/dags.md, Alerts).
    Unset: lag is measured (metrics) but never fails a run."""
    access: AccessSettings = Field(default_factory=AccessSettings)
    """Credentials and TLS (:mod:`cdcgen.access_settings`)."""
    extra: dict[str, str] = Field(default_factory=dict)
    """Adapter options the caller passes itself (not part of the environment form)."""

    EMPTY_IS_A_VALUE: ClassVar[frozenset[str]] = frozenset({"source_keyspace_prefix"})

    @field_validator("contact_points", mode="before")
    @classmethod
    def _hosts(cls, value: Any) -> Any:
        if isinstance(value, str):
            value = [part.strip() for part in value.split(",") if part.strip()]
        if not value:
            raise ValueError("empty: name at least one node")
        return tuple(value)

    @field_validator("lake_roots", mode="before")
    @classmethod
    def _lake_roots(cls, value: Any) -> Any:
        if isinstance(value, str):
            value = [part.strip() for part in value.split(",") if part.strip()]
        return tuple(lake_uri(root) for root in value)

    @field_validator("report_dir")
    @classmethod
    def _absolute(cls, value: Path) -> Path:
        """Absolute, against this process's working directory: a Spark cluster's executors
        run in their own work directories, where a relative path names other files."""
        return value.expanduser().absolute()

    @field_validator("target_keyspace")
    @classmethod
    def _keyspace(cls, value: str) -> str:
        allowed = frozenset({SCYLLA_DISTRIBUTED})
        return check_writable_keyspace(value, "target keyspace", allowed=allowed)

    @field_validator("state_keyspace")
    @classmethod
    def _state_keyspace(cls, value: str | None) -> str | None:
        return None if value is None else check_writable_keyspace(value, "state keyspace")

    @property
    def checkpoint_keyspace(self) -> str:
        """Where the changes pipeline keeps its state (checked again by its store)."""
        return self.state_keyspace or self.target_keyspace

    @field_validator("clock_source")
    @classmethod
    def _clock_source(cls, value: str) -> str:
        known = clock_sources()
        if value not in known:
            raise ValueError(
                f"expected one of {', '.join(known)} (other clock sources are plugins of "
                "the entry point group cdcgen.clock_readers)"
            )
        return value

    @property
    def source_schema(self) -> SourceSchema:
        return SourceSchema(self.source_keyspace_prefix)
