"""Task bodies of ``cdc_generations`` and its maintenance DAG: typed Params in, pipeline
call, typed results out.

The DAG files stay a table of contents: each ``@task`` calls exactly one function here,
with the run's Params read once (:func:`~cdcgen.airflow.run_params.run_params`) and
upstream results read from XCom, and hands what it returns to
:func:`~cdcgen.airflow.xcom.to_xcom`. This module turns those Params and the source
connection into a :class:`~cdcgen.config.PipelineConfig` (through :class:`CdcSourceHook`,
so only when a task runs), builds the ports and calls the pipeline; what it pulls from
XCom itself (each generation's validation) goes through :mod:`cdcgen.airflow.xcom`,
which nothing below this layer knows of.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cdcgen.airflow.connections import DEFAULT_CONNECTIONS, SOURCE_CONN_ID, ClusterConnections
from cdcgen.airflow.failures import fail_fast
from cdcgen.airflow.hooks import CdcSourceHook
from cdcgen.airflow.lake_connection import use_lake_connection
from cdcgen.airflow.run_params import RunParams, run_params
from cdcgen.airflow.spark_jobs import job_env
from cdcgen.airflow.xcom import from_xcom, list_from_xcom, to_xcom
from cdcgen.config import PipelineConfig
from cdcgen.core.generation import Generation
from cdcgen.pipeline.outcomes import ValidationOutcome

if TYPE_CHECKING:
    from cdcgen.pipeline import maintenance
    from cdcgen.pipeline.publish import PublicationOutcome
    from cdcgen.pipeline.run_summary import GenerationsRunSummary

#: ``DagRun.run_type`` of a backfill run (``airflow.utils.types.DagRunType.BACKFILL_JOB``).
BACKFILL = "backfill"

#: XCom key under which validate records its outcome, passed or not.
VALIDATION_KEY = "validation"


def run_type_of(run_type: Any) -> str:
    """``DagRunType`` (the task SDK's enum, whose str() is "DagRunType.X") as its value."""
    return str(getattr(run_type, "value", run_type) or "")


@dataclass(frozen=True)
class PlannedGeneration:
    """A generation detect hands its mapped task group (``expand_kwargs``): the
    generation, and its Spark job's arguments and environment (no credential: they pass
    through XCom)."""

    generation: Generation
    spark_args: tuple[str, ...]
    env_vars: dict[str, str]


def run_config(
    params: RunParams | Mapping[str, Any], conn_id: str = SOURCE_CONN_ID
) -> PipelineConfig:
    """The run's configuration, from the source connection ``conn_id`` and the run's
    Params (Airflow's mapping is read here for the task bodies that still pass it); the
    task's process gets the lake's access with it (its own environment: nothing outlives
    the task)."""
    typed = params if isinstance(params, RunParams) else run_params(params)
    use_lake_connection()
    return CdcSourceHook(cdc_conn_id=conn_id).config_for_run(typed)


@fail_fast
def detect(
    params: RunParams,
    interval_start: datetime | None,
    interval_end: datetime | None,
    run_type: Any = None,
    connections: ClusterConnections = DEFAULT_CONNECTIONS,
) -> list[PlannedGeneration]:
    """Generations this run handles, each with its Spark job (mapped-group kwargs).

    Every run takes the unpublished generations; a backfill run also re-does the
    generations whose timestamps fall in its data interval. (A scheduled run does not:
    it would re-publish every generation once more, one interval later.)
    """
    from cdcgen.adapters.generation_sources import connected_generation_ports
    from cdcgen.generation_lake.ring_records import LakeRingRecords
    from cdcgen.jobs.extract_generation import arguments
    from cdcgen.pipeline.detect import detect as detect_generations

    config = run_config(params, connections.source)
    interval = None
    backfill = run_type_of(run_type) == BACKFILL
    if backfill and interval_start is not None and interval_end is not None:
        interval = (interval_start, interval_end)
    with connected_generation_ports(config) as ports:
        chosen = detect_generations(
            ports.source,
            ports.publisher,
            interval,
            generation_id=params.generation_id or None,
            force=params.force,
            ring=ports.ring,
            rings=LakeRingRecords(config.lake_path),
        )
    env = job_env(config)
    return [PlannedGeneration(s.generation, tuple(arguments(s.generation)), env) for s in chosen]


@fail_fast
def validate(
    params: RunParams,
    generation: Generation,
    ti: Any,
    connections: ClusterConnections = DEFAULT_CONNECTIONS,
) -> ValidationOutcome:
    """Validate; on failure record the outcome (Data Docs path) and fail (a rejection is
    terminal: the same description fails the same checks)."""
    from cdcgen.pipeline.errors import GenerationRejected
    from cdcgen.pipeline.validate import validate as validate_generation

    try:
        outcome = validate_generation(
            run_config(params, connections.source),
            generation,
            dag_id=ti.dag_id,
            run_id=ti.run_id,
        )
    except GenerationRejected as exc:
        ti.xcom_push(key=VALIDATION_KEY, value=to_xcom(exc.outcome))
        raise
    ti.xcom_push(key=VALIDATION_KEY, value=to_xcom(outcome))
    return outcome


def _validations(ti: Any, group_id: str) -> list[ValidationOutcome]:
    """Every map index's outcome (pulled as a list, so none at all is fine too)."""
    pulled = ti.xcom_pull(task_ids=[f"{group_id}.validate"], key=VALIDATION_KEY) or []
    return list_from_xcom(ValidationOutcome, [v for v in pulled if v])


def _detected(detected: Sequence[PlannedGeneration] | None) -> list[Generation] | None:
    return None if detected is None else [item.generation for item in detected]


@fail_fast
def publish(
    params: RunParams,
    detected: Sequence[PlannedGeneration] | None,
    ti: Any,
    group_id: str,
    outlet_events: Any = None,
    alias: Any = None,
    asset: Any = None,
    connections: ClusterConnections = DEFAULT_CONNECTIONS,
) -> PublicationOutcome:
    """Publish the run's validated generations in order; one Asset event per publication.

    The events go through an AssetAlias (one per generation, each with its own
    ``extra``): a task emits a single event per plain Asset outlet. This task succeeds
    even when some generations are held back, so that the events of those published
    are recorded; ``summarize`` then fails the run naming the others.
    """
    from dataclasses import replace

    from cdcgen.adapters.generation_sources import connected_generation_ports
    from cdcgen.airflow import lineage
    from cdcgen.generation_lake.lake_tables import LocalGenerationLake
    from cdcgen.pipeline.publish import publish_in_order
    from cdcgen.pipeline.reporting import record_generation

    config = run_config(params, connections.source)
    validations = _validations(ti, group_id)
    with connected_generation_ports(config) as ports:
        outcome = publish_in_order(
            _detected(detected) or [],
            validations,
            source=ports.source,
            publisher=ports.publisher,
            lake=LocalGenerationLake(config.lake_path),
            target_keyspace=config.target_keyspace,
        )
    lineage.report_publication(config, [item.generation for item in outcome.published])
    by_generation = {v.generation: v for v in validations}
    published = []
    for item in outcome.published:
        page = record_generation(
            config,
            item.generation,
            by_generation[item.generation],
            published=True,
            dag_id=ti.dag_id,
            run_id=ti.run_id,
        )
        published.append(replace(item, page=page))
        if outlet_events is not None and alias is not None and asset is not None:
            outlet_events[alias].add(
                asset,
                extra={
                    "generation_id": item.generation.id,
                    "generation_timestamp": item.generation.iso,
                    "generation_ts_ms": item.generation.ms,
                    "table": item.generation.table or None,
                    "streams": item.streams,
                    "target_keyspace": item.target_keyspace,
                },
            )
    return replace(outcome, published=tuple(published))


@fail_fast
def summarize_run(
    params: RunParams,
    run_id: str,
    detected: Sequence[PlannedGeneration] | None,
    ti: Any,
    group_id: str,
    connections: ClusterConnections = DEFAULT_CONNECTIONS,
) -> GenerationsRunSummary:
    """The run's summary, written to ``<report_dir>/summaries/<run id>.json`` for the demo,
    and its metrics (:mod:`cdcgen.airflow.metrics`).

    This task runs whatever happened upstream and is the DAG's only leaf, so it decides
    the run's state: it fails, after writing the summary, when detection failed or any
    detected generation was not published.
    """
    from datetime import UTC

    from cdcgen.airflow import metrics
    from cdcgen.pipeline.errors import RunIncomplete
    from cdcgen.pipeline.publish import PublicationOutcome
    from cdcgen.pipeline.run_summary import SUMMARIES_DIR, generations_run_summary, write_summary

    config = run_config(params, connections.source)
    pulled = ti.xcom_pull(task_ids="publish")
    publication = from_xcom(PublicationOutcome, pulled) if pulled else PublicationOutcome()
    summary = generations_run_summary(
        run_id, _detected(detected), _validations(ti, group_id), publication
    )
    write_summary(Path(config.report_dir) / SUMMARIES_DIR, summary)
    metrics.record(metrics.generations_points(summary, connections.source, datetime.now(UTC)))
    if summary.problems:
        raise RunIncomplete("; ".join(summary.problems))
    return summary


@fail_fast
def rewrite_v1(
    params: RunParams, connections: ClusterConnections = DEFAULT_CONNECTIONS
) -> maintenance.V1Rewrite | maintenance.RewriteSkipped:
    from cdcgen.pipeline import maintenance

    return maintenance.rewrite_v1(run_config(params, connections.source))


@fail_fast
def expire_superseded(
    params: RunParams, connections: ClusterConnections = DEFAULT_CONNECTIONS
) -> maintenance.Expiry:
    from cdcgen.pipeline import maintenance

    return maintenance.expire_superseded(run_config(params, connections.source))


@fail_fast
def vacuum_lake(
    params: RunParams, connections: ClusterConnections = DEFAULT_CONNECTIONS
) -> maintenance.Vacuum:
    from cdcgen.pipeline import maintenance

    return maintenance.vacuum_lake(run_config(params, connections.source))
