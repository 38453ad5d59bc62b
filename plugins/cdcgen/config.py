"""One typed configuration object for every task, job and command.

Values come from ``CDCGEN_*`` environment variables (which docker-compose and the
Airflow deployment set) with defaults for the embedded sandbox; callers override
single fields with :func:`dataclasses.replace` (Airflow Params do that).  Passing
this one object around replaces long lists of keyword arguments.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import timedelta
from pathlib import Path
from typing import Any

from cdcgen.ports import SourceMode
from cdcgen.schema import SANDBOX_PREFIX, SourceSchema, check_identifier

REPO_ROOT = Path(__file__).resolve().parents[2]


class ConfigError(ValueError):
    """A setting has a value the pipeline cannot use; the message names the setting."""


@dataclass(frozen=True)
class PipelineConfig:
    contact_points: tuple[str, ...] = ("127.0.0.1",)
    port: int = 9042
    source_mode: SourceMode = SourceMode.RAFT
    # "" reads ScyllaDB's own names; "sandbox_" the emulator's.
    source_keyspace_prefix: str = SANDBOX_PREFIX
    # "cql" asks each node for now(); "sandbox" reads the emulator's clocks.
    clock_source: str = "sandbox"
    target_keyspace: str = "sandbox_system_distributed"
    lake_path: Path = REPO_ROOT / "lake"
    report_dir: Path = REPO_ROOT / "reports"
    ring_delay: timedelta = timedelta(seconds=30)
    generation_leeway: timedelta = timedelta(seconds=5)
    confidence_window: timedelta = timedelta(seconds=30)
    clock_wait_timeout: timedelta = timedelta(minutes=10)
    publish_concurrency: int = 20
    extra: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.contact_points:
            raise ConfigError("CDCGEN_CONTACT_POINTS is empty: name at least one node")
        check_identifier(self.target_keyspace, "CDCGEN_TARGET_KEYSPACE")
        if self.clock_source not in ("cql", "sandbox"):
            raise ConfigError(
                f"CDCGEN_CLOCK_SOURCE={self.clock_source!r}: expected 'cql' or 'sandbox'"
            )
        if self.publish_concurrency < 1:
            raise ConfigError("CDCGEN_PUBLISH_CONCURRENCY must be at least 1")

    @property
    def source_schema(self) -> SourceSchema:
        return SourceSchema(self.source_keyspace_prefix)

    def with_overrides(self, **changes: Any) -> PipelineConfig:
        return replace(self, **changes)

    def to_env(self) -> dict[str, str]:
        """The ``CDCGEN_*`` variables :meth:`from_env` turns back into this configuration.

        How a task hands its whole configuration (connection and run Params applied) to
        a process it starts, such as a spark-submit job, without a flag per setting.
        ``extra`` is not included: it holds adapter options the caller passes itself.
        """

        def secs(value: timedelta) -> str:
            return repr(value.total_seconds())

        return {
            "CDCGEN_CONTACT_POINTS": ",".join(self.contact_points),
            "CDCGEN_PORT": str(self.port),
            "CDCGEN_SOURCE_MODE": str(self.source_mode),
            "CDCGEN_SOURCE_KEYSPACE_PREFIX": self.source_keyspace_prefix,
            "CDCGEN_CLOCK_SOURCE": self.clock_source,
            "CDCGEN_TARGET_KEYSPACE": self.target_keyspace,
            "CDCGEN_LAKE_PATH": str(self.lake_path),
            "CDCGEN_REPORT_DIR": str(self.report_dir),
            "CDCGEN_RING_DELAY_SECONDS": secs(self.ring_delay),
            "CDCGEN_LEEWAY_SECONDS": secs(self.generation_leeway),
            "CDCGEN_CONFIDENCE_WINDOW_SECONDS": secs(self.confidence_window),
            "CDCGEN_CLOCK_WAIT_TIMEOUT_SECONDS": secs(self.clock_wait_timeout),
            "CDCGEN_PUBLISH_CONCURRENCY": str(self.publish_concurrency),
        }

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> PipelineConfig:
        env = os.environ if env is None else env
        base = cls()

        def get(name: str) -> str | None:
            value = env.get(f"CDCGEN_{name}")
            return value if value not in (None, "") else None

        def seconds(name: str, default: timedelta) -> timedelta:
            raw = get(name)
            if raw is None:
                return default
            try:
                return timedelta(seconds=float(raw))
            except ValueError:
                raise ConfigError(f"CDCGEN_{name}={raw!r}: expected a number of seconds") from None

        def integer(name: str, default: int) -> int:
            raw = get(name)
            if raw is None:
                return default
            try:
                return int(raw)
            except ValueError:
                raise ConfigError(f"CDCGEN_{name}={raw!r}: expected an integer") from None

        mode_raw = get("SOURCE_MODE")
        try:
            mode = SourceMode(mode_raw) if mode_raw else base.source_mode
        except ValueError:
            choices = ", ".join(m.value for m in SourceMode)
            raise ConfigError(
                f"CDCGEN_SOURCE_MODE={mode_raw!r}: expected one of {choices}"
            ) from None
        points = get("CONTACT_POINTS")
        prefix = env.get("CDCGEN_SOURCE_KEYSPACE_PREFIX")
        return cls(
            contact_points=tuple(p.strip() for p in points.split(",") if p.strip())
            if points
            else base.contact_points,
            port=integer("PORT", base.port),
            source_mode=mode,
            source_keyspace_prefix=base.source_keyspace_prefix if prefix is None else prefix,
            clock_source=get("CLOCK_SOURCE") or base.clock_source,
            target_keyspace=get("TARGET_KEYSPACE") or base.target_keyspace,
            lake_path=Path(get("LAKE_PATH") or base.lake_path),
            report_dir=Path(get("REPORT_DIR") or base.report_dir),
            ring_delay=seconds("RING_DELAY_SECONDS", base.ring_delay),
            generation_leeway=seconds("LEEWAY_SECONDS", base.generation_leeway),
            confidence_window=seconds("CONFIDENCE_WINDOW_SECONDS", base.confidence_window),
            clock_wait_timeout=seconds("CLOCK_WAIT_TIMEOUT_SECONDS", base.clock_wait_timeout),
            publish_concurrency=integer("PUBLISH_CONCURRENCY", base.publish_concurrency),
        )
