"""The Assets the DAGs share: what ``cdc_generations`` publishes, what ``cdc_changes`` follows.

One definition for every DAG (a DAG file must not import another), built from the
environment only, so parsing does no I/O. Parsing reads the one setting the Assets need
(the target keyspace), not the whole configuration: a bad value of another setting must
fail the runs that use it, with its message, not make the DAG files fail to import.

Every Asset and alias is named by its *cluster* (the DAGs' name for it: by default the
source connection's id, or the sink's for a sink table) and its table, so that the DAGs
of two clusters, built by the same factories (:mod:`cdcgen.airflow.dag_factories`), never update
or wait for each other's.
"""

from __future__ import annotations

import logging

from airflow.sdk import Asset, AssetAlias

from cdcgen.airflow.connections import SOURCE_CONN_ID
from cdcgen.config import PipelineConfig
from cdcgen.errors import ConfigError

log = logging.getLogger(__name__)


def asset_uri(settings: PipelineConfig, cluster: str = SOURCE_CONN_ID) -> str:
    """The Asset each publication updates: the target's generation-timestamps table."""
    return published_generations(cluster, settings).uri


def published_generations(
    cluster: str = SOURCE_CONN_ID, settings: PipelineConfig | None = None
) -> Asset:
    """The target's ``cdc_generation_timestamps``: updated once per published generation."""
    keyspace = settings.target_keyspace if settings else _target_keyspace_from_env()
    return _table(cluster, keyspace, "cdc_generation_timestamps")


def extracted_changes(
    cluster: str = SOURCE_CONN_ID, settings: PipelineConfig | None = None
) -> Asset:
    """The changes pipeline's progress: updated by every successful ``cdc_changes`` run
    (the watermarks moved, so there is more to replicate)."""
    keyspace = settings.checkpoint_keyspace if settings else _state_keyspace_from_env()
    return _table(cluster, keyspace, "cdc_table_progress")


def replicated_table(cluster: str, sink_table: str) -> Asset:
    """A sink table on the ``cluster`` it is replicated to: one event per replication
    run, with its consistency timestamp."""
    keyspace, _, table = sink_table.partition(".")
    return _table(cluster, keyspace, table)


def committed_generations(
    cluster: str = SOURCE_CONN_ID,
    settings: PipelineConfig | None = None,
    *,
    poll_interval: float | None = None,
) -> Asset:
    """The source cluster's committed generations, watched: an event as soon as one is
    committed that is not published yet (the generations DAG's event-driven schedule).

    The watcher's trigger (:class:`~cdcgen.airflow.triggers.GenerationCommittedTrigger`)
    reads the connection named ``cluster`` in the triggerer, and compares with the
    target keyspace this Asset's sibling :func:`published_generations` is named by.
    """
    from airflow.sdk import AssetWatcher

    from cdcgen.airflow.triggers import WATCH_POLL_SECONDS, GenerationCommittedTrigger

    keyspace = settings.target_keyspace if settings else _target_keyspace_from_env()
    trigger = GenerationCommittedTrigger(
        conn_id=cluster,
        target_keyspace=keyspace,
        poll_interval=WATCH_POLL_SECONDS if poll_interval is None else poll_interval,
    )
    return Asset(
        name=f"{cluster}.cdc_committed_generations",
        uri=f"cdc://{cluster}/cdc_committed_generations",
        group="cdc",
        watchers=[AssetWatcher(name=f"{cluster}.generation_watch", trigger=trigger)],
    )


def publications(cluster: str = SOURCE_CONN_ID) -> AssetAlias:
    """A task emits one event per Asset outlet; through this alias, one per generation."""
    return AssetAlias(name=f"{cluster}.cdc_published_generations", group="cdc")


def replications(cluster: str = SOURCE_CONN_ID) -> AssetAlias:
    """Through this alias, one event per sink table a replication run brought forward."""
    return AssetAlias(name=f"{cluster}.cdc_replicated_tables", group="cdc")


def _table(cluster: str, keyspace: str, table: str) -> Asset:
    return Asset(
        name=f"{cluster}.{keyspace}.{table}", uri=f"cdc://{cluster}/{keyspace}/{table}", group="cdc"
    )


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
