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

from datetime import timedelta
from pathlib import Path
from typing import Annotated, Any, ClassVar, Literal, Self

from pydantic import (
    BeforeValidator,
    Field,
    SecretStr,
    field_validator,
    model_validator,
)

from cdcgen.core.generation import SourceMode
from cdcgen.core.identifiers import (
    SCYLLA_DISTRIBUTED,
    STATE_KEYSPACE_SETTING,
    check_writable_keyspace,
)
from cdcgen.core.lake_uri import lake_uri
from cdcgen.env_settings import ConfigError as ConfigError
from cdcgen.env_settings import EnvSettings as EnvSettings
from cdcgen.env_settings import env as env
from cdcgen.env_settings import env_text as env_text
from cdcgen.extensions import clock_sources
from cdcgen.schema import SourceSchema

REPO_ROOT = Path(__file__).resolve().parents[2]
#: Run records the report site keeps (``CDCGEN_REPORT_KEEP_RUNS``): about a month of a
#: changes run every hour; the oldest beyond are removed as a task records its run.
DEFAULT_REPORT_KEEP_RUNS = 1000


class PipelineConfig(EnvSettings):
    contact_points: tuple[str, ...] = env("CDCGEN_CONTACT_POINTS", ("127.0.0.1",))
    port: int = env("CDCGEN_PORT", 9042, ge=1, le=65535)
    #: Native protocol version; unset, the driver negotiates (ScyllaDB serves v4).
    protocol_version: int | None = env("CDCGEN_PROTOCOL_VERSION", None, ge=3, le=5)
    source_mode: SourceMode = env("CDCGEN_SOURCE_MODE", SourceMode.RAFT)
    #: "" reads ScyllaDB's own keyspaces; a prefix reads copies of them (a sandbox).
    source_keyspace_prefix: str = env("CDCGEN_SOURCE_KEYSPACE_PREFIX", "")
    #: "cql" asks each node for now(); other sources are plugins (cdcgen.extensions).
    clock_source: str = env("CDCGEN_CLOCK_SOURCE", "cql")
    target_keyspace: str = env("CDCGEN_TARGET_KEYSPACE", SCYLLA_DISTRIBUTED)
    #: The changes pipeline's checkpoints and watermark; unset, the target keyspace (which
    #: then may not be ScyllaDB's system_distributed: no tables of ours go there).
    state_keyspace: str | None = env(STATE_KEYSPACE_SETTING, None)
    #: A folder, or ``s3://bucket/prefix`` (cdcgen.adapters.lake_store: AWS_* reach it).
    lake_path: Annotated[str, BeforeValidator(lake_uri)] = env(
        "CDCGEN_LAKE_PATH", lake_uri(REPO_ROOT / "lake")
    )
    #: Further lakes a run's ``lake_path`` Param may name (comma-separated folders or
    #: s3:// prefixes), besides the configured lake and what lies under it.
    lake_roots: tuple[str, ...] = env("CDCGEN_LAKE_ROOTS", ())
    report_dir: Path = env("CDCGEN_REPORT_DIR", REPO_ROOT / "reports")
    report_keep_runs: int = env("CDCGEN_REPORT_KEEP_RUNS", DEFAULT_REPORT_KEEP_RUNS, ge=1)
    ring_delay: timedelta = env("CDCGEN_RING_DELAY_SECONDS", timedelta(seconds=30))
    generation_leeway: timedelta = env("CDCGEN_LEEWAY_SECONDS", timedelta(seconds=5))
    confidence_window: timedelta = env("CDCGEN_CONFIDENCE_WINDOW_SECONDS", timedelta(seconds=30))
    clock_wait_timeout: timedelta = env("CDCGEN_CLOCK_WAIT_TIMEOUT_SECONDS", timedelta(minutes=10))
    #: Unset: expired generations keep their description rows (ScyllaDB's behaviour).
    #: Set: the maintenance DAG deletes them this long after they expired.
    prune_expired_after: timedelta | None = env("CDCGEN_PRUNE_EXPIRED_AFTER_SECONDS", None)
    publish_concurrency: int = env("CDCGEN_PUBLISH_CONCURRENCY", 8, ge=1)
    #: Which engine flags a generation's rows before GX checks them: ``sql`` (SQLite,
    #: in-process, no JVM), ``spark``, or ``auto``: SQLite up to
    #: ``validation_sql_max_streams`` streams, Spark above (cdcgen.validation.flag_engines).
    validation_engine: Literal["auto", "sql", "spark"] = env("CDCGEN_VALIDATION_ENGINE", "auto")
    validation_sql_max_streams: int = env("CDCGEN_VALIDATION_SQL_MAX_STREAMS", 200_000, ge=0)
    # Access (see cdcgen.adapters.cluster_access): a password is never written back to an
    # environment by to_env(); processes the pipeline starts get a password file.
    username: str | None = env("CDCGEN_USERNAME", None, min_length=1)
    password: SecretStr | None = env("CDCGEN_PASSWORD", None)
    password_file: Path | None = env("CDCGEN_PASSWORD_FILE", None)
    #: TLS to the nodes; on by itself when a CA, certificate or key file is given.
    tls: bool = env("CDCGEN_TLS", False)
    #: CA bundle the nodes' certificates must chain to (unset: the system's trust store).
    tls_ca_file: Path | None = env("CDCGEN_TLS_CA_FILE", None)
    tls_cert_file: Path | None = env("CDCGEN_TLS_CERT_FILE", None)
    tls_key_file: Path | None = env("CDCGEN_TLS_KEY_FILE", None)
    tls_verify_hostname: bool = env("CDCGEN_TLS_VERIFY_HOSTNAME", True)
    #: Adapter options the caller passes itself (not part of the environment form).
    extra: dict[str, str] = Field(default_factory=dict)

    EMPTY_IS_A_VALUE: ClassVar[frozenset[str]] = frozenset({"source_keyspace_prefix"})
    NOT_EXPORTED: ClassVar[frozenset[str]] = frozenset({"username", "password", "password_file"})

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

    @model_validator(mode="after")
    def _access(self) -> Self:
        names = self.env_names()
        if self.password is not None and self.password_file is not None:
            raise ValueError(f"set {names['password']} or {names['password_file']}, not both")
        has_password = self.password is not None or self.password_file is not None
        if has_password != (self.username is not None):
            raise ValueError(
                f"{names['username']} and a password ({names['password']} or "
                f"{names['password_file']}) go together"
            )
        if (self.tls_cert_file is None) != (self.tls_key_file is None):
            raise ValueError(
                f"{names['tls_cert_file']} and {names['tls_key_file']} go together "
                "(a client certificate needs its key)"
            )
        return self

    @property
    def uses_tls(self) -> bool:
        files = (self.tls_ca_file, self.tls_cert_file, self.tls_key_file)
        return self.tls or any(f is not None for f in files)

    @property
    def source_schema(self) -> SourceSchema:
        return SourceSchema(self.source_keyspace_prefix)
