"""The Assets the DAGs share: what ``cdc_generations`` publishes, what ``cdc_changes`` follows.

One definition for both DAG files (a DAG file must not import another), built from the
environment only, so parsing does no I/O. Parsing reads the one setting the Assets need
(the target keyspace), not the whole configuration: a bad value of another setting must
fail the runs that use it, with its message, not make the DAG files fail to import.
"""

from __future__ import annotations

import logging

from airflow.sdk import Asset, AssetAlias

from cdcgen.config import ConfigError, PipelineConfig

log = logging.getLogger(__name__)


def asset_uri(settings: PipelineConfig) -> str:
    """The Asset each publication updates: the target's generation-timestamps table."""
    return published_generations(settings).uri


def published_generations(settings: PipelineConfig | None = None) -> Asset:
    """The target's ``cdc_generation_timestamps``: updated once per published generation."""
    keyspace = settings.target_keyspace if settings else _target_keyspace_from_env()
    return Asset(
        name=f"{keyspace}.cdc_generation_timestamps",
        uri=f"cdc://{keyspace}/cdc_generation_timestamps",
        group="cdc",
    )


def extracted_changes(settings: PipelineConfig | None = None) -> Asset:
    """The changes pipeline's progress: updated by every successful ``cdc_changes`` run
    (the watermarks moved, so there is more to replicate)."""
    keyspace = settings.checkpoint_keyspace if settings else _state_keyspace_from_env()
    return Asset(
        name=f"{keyspace}.cdc_table_progress",
        uri=f"cdc://{keyspace}/cdc_table_progress",
        group="cdc",
    )


def replicated_table(sink_table: str) -> Asset:
    """A sink table: one event per replication run, with its consistency timestamp."""
    return Asset(name=sink_table, uri=f"cdc://{sink_table.replace('.', '/')}", group="cdc")


def _state_keyspace_from_env() -> str:
    """The state keyspace setting alone (else the target keyspace's), checked like it."""
    variable = PipelineConfig.env_names()["state_keyspace"]
    value = PipelineConfig.read_env(only={"state_keyspace"}).get(variable)
    if not value:
        return _target_keyspace_from_env()
    try:
        return PipelineConfig.validated({variable: value}).checkpoint_keyspace
    except ConfigError as exc:
        log.warning("the DAGs' Assets use the target keyspace: %s", exc)
        return _target_keyspace_from_env()


def _target_keyspace_from_env() -> str:
    """The target keyspace setting alone; a bad one names the default's Asset (its runs
    fail with the setting's message when they read the configuration)."""
    variable = PipelineConfig.env_names()["target_keyspace"]
    default = str(PipelineConfig.model_fields["target_keyspace"].default)
    try:
        return PipelineConfig.validated(
            {variable: PipelineConfig.read_env(only={"target_keyspace"}).get(variable) or default}
        ).target_keyspace
    except ConfigError as exc:
        log.warning("the DAGs' Assets use %s: %s", default, exc)
        return default


#: A task emits one event per Asset outlet; through this alias, one per generation.
PUBLICATIONS = AssetAlias(name="cdc_published_generations", group="cdc")
#: Through this alias, one event per sink table a replication run brought forward.
REPLICATIONS = AssetAlias(name="cdc_replicated_tables", group="cdc")
