"""Task bodies of the DAGs: Airflow context in, one pipeline call, JSON out.

The DAG files stay a table of contents: each ``@task`` calls exactly one function
here.  This module turns the run's Params and the source connection into a
:class:`PipelineConfig` (through :class:`CdcSourceHook`, so only when a task runs)
and hands it to :mod:`cdcgen.pipeline.generations`, which knows nothing of Airflow.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

from cdcgen.airflow.connections import SOURCE_CONN_ID
from cdcgen.config import PipelineConfig
from cdcgen.pipeline import generations as pipeline

#: ``DagRun.run_type`` of a backfill run (``airflow.utils.types.DagRunType.BACKFILL_JOB``).
BACKFILL = "backfill"

#: Where run summaries are written, under the report directory.
SUMMARIES_DIR = "summaries"

#: XCom key under which validate records its outcome, passed or not.
VALIDATION_KEY = "validation"


def run_config(params: Mapping[str, Any], cdc_conn_id: str = SOURCE_CONN_ID) -> PipelineConfig:
    """The source connection's configuration with this run's Params applied."""
    from cdcgen.airflow.hooks import CdcSourceHook

    overrides: dict[str, Any] = {}
    if params.get("lake_path"):
        overrides["lake_path"] = Path(str(params["lake_path"])).expanduser()
    return CdcSourceHook(cdc_conn_id).get_config(**overrides)


def detect(
    params: Mapping[str, Any],
    interval_start: datetime | None,
    interval_end: datetime | None,
    run_type: str | None = None,
) -> list[dict[str, Any]]:
    """Generations this run handles, each with its Spark arguments (mapped-group kwargs).

    Every run takes the unpublished generations; a backfill run also re-does the
    generations whose timestamps fall in its data interval.  (A scheduled run does
    not: it would re-publish every generation once more, one interval later.)
    """
    config = run_config(params)
    backfill = _run_type(run_type) == BACKFILL
    found = pipeline.detect(
        config,
        interval_start if backfill else None,
        interval_end if backfill else None,
        generation_id=str(params.get("generation_id") or "") or None,
        force=bool(params.get("force")),
    )
    return pipeline.expand_kwargs(config, found)


def validate(params: Mapping[str, Any], generation: Mapping[str, Any], ti: Any) -> dict[str, Any]:
    """Validate; on failure record the outcome (Data Docs path) and fail without retrying."""
    from airflow.sdk.exceptions import AirflowFailException

    try:
        outcome = pipeline.validate(
            run_config(params), generation, dag_id=ti.dag_id, run_id=ti.run_id
        )
    except pipeline.GenerationRejected as exc:
        ti.xcom_push(key=VALIDATION_KEY, value=exc.outcome)
        raise AirflowFailException(str(exc)) from exc
    ti.xcom_push(key=VALIDATION_KEY, value=outcome)
    return outcome


def publish(
    params: Mapping[str, Any],
    detected: Sequence[Mapping[str, Any]] | None,
    ti: Any,
    group_id: str,
    outlet_events: Any = None,
    alias: Any = None,
    asset: Any = None,
) -> dict[str, Any]:
    """Publish the run's validated generations in order; one Asset event per publication.

    The events go through an AssetAlias (one per generation, each with its own
    ``extra``): a task emits a single event per plain Asset outlet.  This task
    succeeds even when some generations are held back, so that the events of those
    published are recorded; ``summarize`` then fails the run naming the others.
    """
    validations = ti.xcom_pull(task_ids=[f"{group_id}.validate"], key=VALIDATION_KEY) or []
    result = pipeline.publish_in_order(
        run_config(params),
        [d["generation"] for d in detected or []],
        [v for v in validations if v],
        dag_id=ti.dag_id,
        run_id=ti.run_id,
    )
    if outlet_events is not None and alias is not None and asset is not None:
        for item in result["published"]:
            generation = item["generation"]
            outlet_events[alias].add(
                asset,
                extra={
                    "generation_id": generation["id"],
                    "generation_timestamp": generation["timestamp"],
                    "generation_ts_ms": generation["timestamp_ms"],
                    "table": generation.get("table"),
                    "streams": item["streams"],
                    "target_keyspace": item["target_keyspace"],
                },
            )
    return result


def summarize(
    params: Mapping[str, Any],
    run_id: str,
    detected: Sequence[Mapping[str, Any]] | None,
    ti: Any,
    group_id: str,
) -> dict[str, Any]:
    """The run's summary, written to ``<report_dir>/summaries/<run id>.json`` for the demo.

    (``<report_dir>/runs/`` belongs to the report site's records, a different schema.)
    This task runs whatever happened upstream, and is the DAG's only leaf, so it
    decides the run's state: it fails, after writing the summary, when detection
    failed or any detected generation was not published.  Task ids are pulled as
    lists so every map index comes back, including none at all.
    """
    from airflow.sdk.exceptions import AirflowFailException

    config = run_config(params)
    validations = ti.xcom_pull(task_ids=[f"{group_id}.validate"], key=VALIDATION_KEY) or []
    publication = ti.xcom_pull(task_ids="publish") or {}
    summary = pipeline.summarize(
        [d["generation"] for d in detected or []],
        publication.get("published", []),
        [v for v in validations if v],
        publication.get("held_back", []),
    )
    summary["run_id"] = run_id
    problems = []
    if detected is None:
        problems.append("detect failed: nothing was examined")
    if summary["rejected"]:
        problems.append(f"rejected by validation: {', '.join(summary['rejected'])}")
    if summary["not_validated"]:
        problems.append(
            f"never validated (wait or extract failed): {', '.join(summary['not_validated'])}"
        )
    held = [h for h in summary["held_back"] if h["generation"] not in summary["rejected"]]
    held = [h for h in held if h["generation"] not in summary["not_validated"]]
    if held:
        problems.append(
            "held back: " + "; ".join(f"{h['generation']} ({h['reason']})" for h in held)
        )
    unpublished = summary["generations_detected"] - summary["generations_published"]
    if unpublished and not problems:
        problems.append(f"{unpublished} validated generation(s) failed to publish")
    summary["status"] = "failed" if problems else "ok"
    summary["problems"] = problems
    folder = Path(config.report_dir) / SUMMARIES_DIR
    folder.mkdir(parents=True, exist_ok=True)
    safe = re.sub(r"[^A-Za-z0-9_.-]+", "_", run_id)
    (folder / f"{safe}.json").write_text(json.dumps(summary, indent=2, sort_keys=True) + "\n")
    if problems:
        raise AirflowFailException("run incomplete: " + "; ".join(problems))
    return summary


def rewrite_v1(params: Mapping[str, Any]) -> dict[str, Any]:
    from cdcgen.pipeline import maintenance

    return maintenance.rewrite_v1(run_config(params))


def expire_superseded(params: Mapping[str, Any]) -> dict[str, Any]:
    from cdcgen.pipeline import maintenance

    return maintenance.expire_superseded(run_config(params))


# --- cdc_changes -----------------------------------------------------------------------


def _run_type(run_type: Any) -> str:
    """``DagRunType`` (the task SDK's enum, whose str() is "DagRunType.X") as its value."""
    return str(getattr(run_type, "value", run_type) or "")


def changes_plan(
    params: Mapping[str, Any],
    dag_run: Any,
    interval_start: datetime | None,
    interval_end: datetime | None,
) -> list[dict[str, Any]]:
    """The run's tables, each with its window end (for the wait) and its Spark job."""
    from cdcgen.pipeline import changes

    return changes.plan(
        run_config(params),
        run_type=_run_type(dag_run.run_type),
        interval_start=interval_start,
        interval_end=interval_end,
        run_after=getattr(dag_run, "run_after", None),
        run_id=dag_run.run_id,
        dag_id=dag_run.dag_id,
        tables=str(params.get("tables") or ""),
    )


def changes_summarize(
    params: Mapping[str, Any], run_id: str, planned: Sequence[Mapping[str, Any]] | None
) -> dict[str, Any]:
    """Every table's result in one summary; fails the run naming each table that failed."""
    from airflow.sdk.exceptions import AirflowFailException

    from cdcgen.pipeline import changes

    summary = changes.changes_run_summary(run_config(params), run_id, planned)
    if summary["problems"]:
        raise AirflowFailException("changes run incomplete: " + "; ".join(summary["problems"]))
    return summary
