"""The ``cdc_generations`` pipeline, one function per DAG step: detect, extract args,
validate, publish, summarise; plus the maintenance steps (expire, V1 -> V2 rewrite).

Each function takes the run's :class:`PipelineConfig` (from the source connection
and ``CDCGEN_*`` settings, with the run's Params applied) and returns plain JSON
values, because results travel through XCom and mapped task groups expand over
them.  A generation travels as a small dict (:func:`generation_record`), never
as its description: the description can hold millions of streams, so it goes
through the lake (written by the Spark job, read by validate and publish) and
what is published is exactly what was validated.
"""

from __future__ import annotations

import contextlib
import logging
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from cdcgen.config import REPO_ROOT, PipelineConfig
from cdcgen.core.generation import MetadataError, SourceMode
from cdcgen.ports import GenerationRef

log = logging.getLogger(__name__)

#: The spark-submit entry point of the extract step.
EXTRACT_APPLICATION = REPO_ROOT / "spark" / "extract_generation.py"

#: Spark settings for a small machine: two local cores, few shuffle partitions, no UI.
SPARK_CONF: dict[str, str] = {
    "spark.sql.shuffle.partitions": "2",
    "spark.default.parallelism": "2",
    "spark.ui.enabled": "false",
    "spark.sql.session.timeZone": "UTC",
    "spark.driver.memory": "1g",
}


class GenerationRejected(Exception):
    """Terminal: validation failed; the generation must not be published.

    ``outcome`` is the same JSON summary a passing validation returns (with the
    Data Docs path), so callers can record why without parsing the message.
    """

    def __init__(self, message: str, outcome: Mapping[str, Any]) -> None:
        super().__init__(message)
        self.outcome = dict(outcome)


# --- detect ---------------------------------------------------------------------------


def to_millis(moment: datetime) -> int:
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return int(moment.timestamp() * 1000)


def from_millis(ms: int) -> datetime:
    return datetime.fromtimestamp(ms / 1000, tz=UTC)


def generation_record(ref: GenerationRef, reason: str, table: str | None = None) -> dict[str, Any]:
    """The JSON form a generation travels in: id, timestamp (ms and ISO) and why it runs.

    ``table`` (``keyspace.table``) is set for a tablets stream set, whose ``id`` is
    the CDC log table's id: such a "generation" belongs to one table only.
    """
    ms = to_millis(ref.timestamp)
    record: dict[str, Any] = {
        "id": ref.id,
        "timestamp_ms": ms,
        "timestamp": from_millis(ms).isoformat(timespec="milliseconds"),
        "reason": reason,
    }
    if table:
        record["table"] = table
    return record


def generation_key(generation: Mapping[str, Any]) -> tuple[str, int]:
    """What identifies a generation record in a run: its lane (table, or "") and timestamp.

    Two tablets tables may open stream sets in the same millisecond; the timestamp
    alone names a vnode generation only.
    """
    return str(generation.get("table") or ""), int(generation["timestamp_ms"])


def ref_of(generation: Mapping[str, Any]) -> GenerationRef:
    return GenerationRef(from_millis(int(generation["timestamp_ms"])), str(generation["id"]))


@dataclass(frozen=True)
class Selected:
    ref: GenerationRef
    reason: str  # "unpublished" | "in_interval" | "forced"


def select_generations(
    refs: Iterable[GenerationRef],
    is_published: Callable[[GenerationRef], bool],
    interval_start: datetime | None,
    interval_end: datetime | None,
    *,
    generation_id: str | None = None,
    force: bool = False,
) -> list[Selected]:
    """Which committed generations a run handles, oldest first.

    Every generation not yet published; plus every one whose timestamp falls in
    the run's data interval ``[start, end)`` (a backfill re-does its interval,
    idempotently); plus, with ``force``, every one in scope.  ``generation_id``
    narrows the scope to one generation (matched by source id, ISO timestamp or
    milliseconds) and is an error when nothing matches: a typo must not turn into
    a silent no-op.
    """
    candidates = sorted(refs)
    if generation_id:
        candidates = [r for r in candidates if _matches(r, generation_id)]
        if not candidates:
            raise LookupError(f"no committed generation matches generation_id={generation_id!r}")
    chosen: list[Selected] = []
    for ref in candidates:
        ms = to_millis(ref.timestamp)
        if not is_published(ref):
            chosen.append(Selected(ref, "unpublished"))
        elif (
            interval_start is not None
            and interval_end is not None
            and to_millis(interval_start) <= ms < to_millis(interval_end)
        ):
            chosen.append(Selected(ref, "in_interval"))
        elif force:
            chosen.append(Selected(ref, "forced"))
    return chosen


def _matches(ref: GenerationRef, wanted: str) -> bool:
    wanted = wanted.strip()
    ms = to_millis(ref.timestamp)
    if wanted in (ref.id, str(ms)):
        return True
    try:
        moment = datetime.fromisoformat(wanted.replace("Z", "+00:00"))
    except ValueError:
        return False
    return to_millis(moment) == ms


def detect(
    config: PipelineConfig,
    interval_start: datetime | None,
    interval_end: datetime | None,
    *,
    generation_id: str | None = None,
    force: bool = False,
) -> list[dict[str, Any]]:
    """Read the source's committed generations and the target's published ones; select."""
    from cdcgen.adapters.cql import client_for
    from cdcgen.adapters.generation_sources import source_for

    with client_for(config) as client:
        source = source_for(client, config)
        refs = source.list_generations()
        publisher = _publisher(client, config)
        if config.source_mode == SourceMode.TABLETS:
            tables = {str(k): v for k, v in source.table_ids().items()}  # type: ignore[attr-defined]
            published = _tablet_publications(publisher, set(tables.values()))

            def is_published(ref: GenerationRef) -> bool:
                return to_millis(ref.timestamp) in published.get(tables.get(ref.id, ""), set())

        else:
            tables = {}
            published_ms = {to_millis(ts) for ts in publisher.published_timestamps()}

            def is_published(ref: GenerationRef) -> bool:
                return to_millis(ref.timestamp) in published_ms

        chosen = select_generations(
            refs,
            is_published,
            interval_start,
            interval_end,
            generation_id=generation_id,
            force=force,
        )
    log.info(
        "%d committed generation(s) in %s mode, %d selected for this run: %s",
        len(refs),
        config.source_mode,
        len(chosen),
        ", ".join(f"{s.ref.timestamp.isoformat()} ({s.reason})" for s in chosen) or "none",
    )
    return [generation_record(s.ref, s.reason, tables.get(s.ref.id)) for s in chosen]


def _tablet_publications(publisher: Any, tables: Iterable[str]) -> dict[str, set[int]]:
    """Published stream-set timestamps (ms) per ``keyspace.table``."""
    found = {}
    for name in tables:
        keyspace, _, table = name.partition(".")
        found[name] = {to_millis(t) for t in publisher.published_tablet_timestamps(keyspace, table)}
    return found


# --- extract --------------------------------------------------------------------------


def generation_dir(config: PipelineConfig, generation: Mapping[str, Any]) -> Path:
    """The extract job's output for a generation (see :func:`cdcgen.extract.lake.partition_dir`)."""
    from cdcgen.extract.lake import partition_dir

    table = generation.get("table")
    return partition_dir(config.lake_path, int(generation["timestamp_ms"]), table or None)


def spark_args(config: PipelineConfig, generation: Mapping[str, Any]) -> list[str]:
    """Arguments of ``spark/extract_generation.py`` for one generation.

    The job reads the source itself (it needs the full description, which does
    not fit in XCom), so it is given the source settings explicitly rather than
    relying on the worker's environment reaching the Spark driver.
    """
    return [
        "--generation-ts-ms",
        str(generation["timestamp_ms"]),
        "--generation-id",
        str(generation["id"]),
        "--lake",
        str(config.lake_path),
        "--contact-points",
        ",".join(config.contact_points),
        "--port",
        str(config.port),
        "--source-mode",
        str(config.source_mode),
        "--source-keyspace-prefix",
        config.source_keyspace_prefix,
        *(["--table", str(generation["table"])] if generation.get("table") else []),
    ]


def expand_kwargs(
    config: PipelineConfig, generations: Sequence[Mapping[str, Any]]
) -> list[dict[str, Any]]:
    """One mapping per generation for the mapped task group: the record and its Spark args."""
    return [{"generation": dict(g), "spark_args": spark_args(config, g)} for g in generations]


def spark_env() -> dict[str, str]:
    """Environment for spark-submit: Spark's Python must be the one that has cdcgen."""
    return {"PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable}


# --- validate / publish ---------------------------------------------------------------


def validate(
    config: PipelineConfig,
    generation: Mapping[str, Any],
    *,
    dag_id: str = "",
    run_id: str = "",
) -> dict[str, Any]:
    """Run the GX suites on the extracted generation and record the outcome for the report site.

    Raises :class:`GenerationRejected` if any expectation fails; its message is the
    validation summary (each failed expectation with a few offending streams) and the
    Data Docs path.
    """
    from cdcgen.pipeline.reporting import expectations_json, record_generation
    from cdcgen.validation.generation_suite import validate_generation

    directory = generation_dir(config, generation)
    result = validate_generation(config, directory)
    outcome: dict[str, Any] = {
        "generation": dict(generation),
        "passed": bool(result.passed),
        "report": str(result.report_index) if result.report_index else None,
        "summary": result.summary,
        "failed": [f.describe() for f in result.failures],
        "expectations": expectations_json(result.checks),
        "skipped": list(result.skipped),
    }
    outcome["page"] = record_generation(
        config, generation, directory, outcome, published=False, dag_id=dag_id, run_id=run_id
    )
    if not result.passed:
        raise GenerationRejected(
            f"generation {generation['timestamp']} ({generation['id']}) failed validation and "
            f"will not be published.\n{result.summary}\nReport page: {outcome['page']}",
            outcome,
        )
    return outcome


def publish_in_order(
    config: PipelineConfig,
    detected: Sequence[Mapping[str, Any]],
    validations: Sequence[Mapping[str, Any]],
    *,
    dag_id: str = "",
    run_id: str = "",
) -> dict[str, Any]:
    """Publish this run's validated generations oldest first; hold back what must wait.

    Consumers move from a generation to the next timestamp they see in
    ``cdc_generation_timestamps``: publish a newer generation while an older one is
    missing and they skip the older one for good.  So generations go out in
    timestamp order (per table, for tablets), and the first one that cannot be
    published (rejected, or never validated because its wait or extract failed)
    holds back every newer one, as does an older committed generation that is
    still unpublished outside this run.  Returns ``{"published": [...],
    "held_back": [{"generation", "reason"}]}``; the caller decides the run's fate.
    """
    from cdcgen.adapters.cql import client_for
    from cdcgen.adapters.generation_sources import source_for

    published: list[dict[str, Any]] = []
    held_back: list[dict[str, Any]] = []
    with client_for(config) as client:
        unpublished = _unpublished_committed(client, config, source_for(client, config))
        for generation, validation, reason in publication_plan(detected, validations, unpublished):
            if reason is None:
                published.append(
                    publish(
                        config, generation, validation, client=client, dag_id=dag_id, run_id=run_id
                    )
                )
            else:
                log.error("not published: %s: %s", generation["timestamp"], reason)
                held_back.append({"generation": dict(generation), "reason": reason})
    return {"published": published, "held_back": held_back}


def publication_plan(
    detected: Sequence[Mapping[str, Any]],
    validations: Sequence[Mapping[str, Any]],
    unpublished: Mapping[str, Sequence[int]],
) -> list[tuple[Mapping[str, Any], Mapping[str, Any] | None, str | None]]:
    """``(generation, validation, None)`` to publish, or ``(..., reason)`` to hold back.

    Pure: the order rule of :func:`publish_in_order`.  ``unpublished`` maps a lane
    (``keyspace.table`` for tablets, ``""`` for vnodes) to the committed generations
    (ms) not yet in the target.
    """
    outcome = {generation_key(v["generation"]): v for v in validations}
    plan: list[tuple[Mapping[str, Any], Mapping[str, Any] | None, str | None]] = []
    blocked: dict[str, str] = {}  # lane -> why newer generations wait
    ordered = sorted(detected, key=generation_key)
    in_run = {generation_key(g) for g in detected}
    for generation in ordered:
        lane, ms = generation_key(generation)
        validation = outcome.get((lane, ms))
        older = [t for t in unpublished.get(lane, ()) if t < ms and (lane, t) not in in_run]
        if lane in blocked:
            reason: str | None = blocked[lane]
        elif older:
            reason = f"older generation {from_millis(older[0]).isoformat()} is not published"
        elif validation is None:
            reason = "it was never validated (its wait or extract failed)"
        elif not validation.get("passed"):
            reason = "it failed validation"
        else:
            reason = None
        plan.append((generation, validation, reason))
        if reason is not None:
            blocked.setdefault(lane, f"older generation {generation['timestamp']}: {reason}")
    return plan


def _unpublished_committed(
    client: Any, config: PipelineConfig, source: Any
) -> dict[str, list[int]]:
    """Committed generations (ms) not yet in the target, per lane (table or "" for vnodes)."""
    publisher = _publisher(client, config)
    refs = source.list_generations()
    if config.source_mode == SourceMode.TABLETS:
        tables = {str(k): v for k, v in source.table_ids().items()}
        done = _tablet_publications(publisher, set(tables.values()))
        lanes: dict[str, list[int]] = {}
        for ref in refs:
            name = tables.get(ref.id, "")
            if to_millis(ref.timestamp) not in done.get(name, set()):
                lanes.setdefault(name, []).append(to_millis(ref.timestamp))
        return {k: sorted(v) for k, v in lanes.items()}
    done_ms = {to_millis(t) for t in publisher.published_timestamps()}
    return {
        "": sorted(to_millis(r.timestamp) for r in refs if to_millis(r.timestamp) not in done_ms)
    }


def publish(
    config: PipelineConfig,
    generation: Mapping[str, Any],
    validation: Mapping[str, Any] | None = None,
    *,
    client: Any = None,
    dag_id: str = "",
    run_id: str = "",
) -> dict[str, Any]:
    """Publish exactly the validated description: streams table first, then the timestamp row.

    The description is read from the lake partition, checked against the hash the
    extract step recorded, so what is published is what was validated.
    """
    from cdcgen.adapters.cql import client_for
    from cdcgen.extract.lake import read_artifact

    directory = generation_dir(config, generation)
    if validation is not None and not validation.get("passed"):
        raise GenerationRejected(f"generation {generation['timestamp']} did not pass", validation)
    artifact = read_artifact(directory)
    columns = artifact.read_description()
    with contextlib.ExitStack() as stack:
        if client is None:
            client = stack.enter_context(client_for(config))
        publisher = _publisher(client, config)
        if generation.get("table"):
            description = columns.to_description()
            rows = _publish_tablet_set(client, config, publisher, generation, description)
        else:
            # Rows straight from the columns: a million-stream generation need not become
            # a million StreamId objects only to be turned back into blobs.
            rows = publisher.publish_rows(ref_of(generation).timestamp, columns.stream_rows())
    result = {
        "generation": dict(generation),
        "target_keyspace": config.target_keyspace,
        "stream_rows": rows,
        "streams": artifact.stream_count,
    }
    if validation is not None:
        from cdcgen.pipeline.reporting import record_generation

        result["page"] = record_generation(
            config, generation, directory, validation, published=True, dag_id=dag_id, run_id=run_id
        )
    return result


def _publish_tablet_set(
    client: Any,
    config: PipelineConfig,
    publisher: Any,
    generation: Mapping[str, Any],
    description: Any,
) -> int:
    """A tablets stream set goes to ``cdc_streams``/``cdc_timestamps`` (ScyllaDB's views).

    The view (current streams plus what opened and closed against the previous set)
    comes from the source; it is published only if its current streams are exactly
    the validated ones.
    """
    from uuid import UUID

    from cdcgen.adapters.generation_sources import source_for

    keyspace, _, table = str(generation["table"]).partition(".")
    views = [
        v
        for v in source_for(client, config).views(UUID(str(generation["id"])))  # type: ignore[attr-defined]
        if to_millis(v.timestamp) == int(generation["timestamp_ms"])
    ]
    validated = {bytes(s) for s in description.streams()}
    if len(views) != 1 or {bytes(s) for s in views[0].current} != validated:
        raise MetadataError(
            f"{generation['table']} at {generation['timestamp']}: the source's stream set is "
            "no longer the one validated; run the generation again"
        )
    return int(publisher.publish_tablet_streams(keyspace, table, views))


def _publisher(client: Any, config: PipelineConfig) -> Any:
    from cdcgen.adapters.tablet_publisher import TabletsPublisher

    return TabletsPublisher(client, config)


# --- summary --------------------------------------------------------------------------


def summarize(
    detected: Sequence[Mapping[str, Any]],
    published: Sequence[Mapping[str, Any]],
    validations: Sequence[Mapping[str, Any]],
    held_back: Sequence[Mapping[str, Any]] = (),
) -> dict[str, Any]:
    """What a run did, as one JSON object (the demo prints it as its last line).

    ``validation`` is ``passed`` only when every detected generation was validated
    and passed; ``failed`` when any failed; ``incomplete`` when some never reached
    validation (wait timed out, extract failed); ``none`` when nothing was detected.
    """
    outcome = {generation_key(v["generation"]): v for v in validations}
    failed = [v for v in validations if not v.get("passed")]
    missing = [g for g in detected if generation_key(g) not in outcome]
    if failed:
        status = "failed"
    elif missing:
        status = "incomplete"
    elif detected:
        status = "passed"
    else:
        status = "none"
    reports = sorted({str(v["report"]) for v in validations if v.get("report")})
    return {
        "generations_detected": len(detected),
        "generations_published": len(published),
        "streams_published": sum(int(p.get("streams", 0)) for p in published),
        "published": sorted(p["generation"]["timestamp"] for p in published),
        "rejected": sorted(v["generation"]["timestamp"] for v in failed),
        "not_validated": sorted(g["timestamp"] for g in missing),
        "held_back": [
            {"generation": h["generation"]["timestamp"], "reason": h["reason"]} for h in held_back
        ],
        "validation": status,
        "report": reports[0] if reports else None,
        "reports": reports,
    }


# --- maintenance ----------------------------------------------------------------------


def expected_asset_uri(config: PipelineConfig) -> str:
    """The Asset each publication updates: the target's generation-timestamps table."""
    return f"cdc://{config.target_keyspace}/cdc_generation_timestamps"
