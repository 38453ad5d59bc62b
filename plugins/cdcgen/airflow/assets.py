"""The Assets the DAGs share: what ``cdc_generations`` publishes, what ``cdc_changes`` follows.

One definition for both DAG files (a DAG file must not import another), built from the
environment only, so parsing does no I/O.
"""

from __future__ import annotations

from airflow.sdk import Asset, AssetAlias

from cdcgen.config import PipelineConfig


def asset_uri(settings: PipelineConfig) -> str:
    """The Asset each publication updates: the target's generation-timestamps table."""
    return f"cdc://{settings.target_keyspace}/cdc_generation_timestamps"


def published_generations(settings: PipelineConfig | None = None) -> Asset:
    """The target's ``cdc_generation_timestamps``: updated once per published generation."""
    settings = settings or PipelineConfig.from_env()
    return Asset(
        name=f"{settings.target_keyspace}.cdc_generation_timestamps",
        uri=asset_uri(settings),
        group="cdc",
    )


#: A task emits one event per Asset outlet; through this alias, one per generation.
PUBLICATIONS = AssetAlias(name="cdc_published_generations", group="cdc")
