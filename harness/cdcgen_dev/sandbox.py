"""The pipeline settings that point at the sandbox instead of a real ScyllaDB.

The product's defaults describe a production cluster; the demo, the tests and the
sandbox commands take theirs from here: the local Cassandra, the emulator's copies of
ScyllaDB's tables under a keyspace prefix, the emulated node clocks, and a target
keyspace of the sandbox's own (never ``system_distributed``).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from cdcgen.config import PipelineConfig

#: Keyspace prefix of the emulator's copies of ScyllaDB's ``system*`` keyspaces.
SANDBOX_PREFIX = "sandbox_"
#: The clock source the emulator lends the pipeline (entry point in harness/pyproject.toml).
SANDBOX_CLOCKS = "sandbox"


def sandbox_settings(prefix: str = SANDBOX_PREFIX) -> dict[str, Any]:
    """The fields that differ from the product's defaults, for a sandbox under ``prefix``."""
    return {
        "source_keyspace_prefix": prefix,
        "clock_source": SANDBOX_CLOCKS,
        "target_keyspace": f"{prefix}system_distributed",
    }


def sandbox_config(prefix: str = SANDBOX_PREFIX, **overrides: Any) -> PipelineConfig:
    """The embedded sandbox's configuration (no environment read), with ``overrides``."""
    return PipelineConfig(**{**sandbox_settings(prefix), **overrides})


def sandbox_env(prefix: str = SANDBOX_PREFIX) -> dict[str, str]:
    """The same settings as ``CDCGEN_*`` variables, for a process the harness starts."""
    names = PipelineConfig.env_names()
    return {names[field]: value for field, value in sandbox_settings(prefix).items()}


def sandbox_config_from_env(environ: Mapping[str, str] | None = None) -> PipelineConfig:
    """The sandbox's settings with any ``CDCGEN_*`` variable of ``environ`` over them."""
    environ = os.environ if environ is None else environ
    return PipelineConfig.from_env({**sandbox_env(), **environ})
