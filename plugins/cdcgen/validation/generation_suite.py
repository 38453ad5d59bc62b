"""Validate one generation with the GX suites: the gate before publication.

Three suites (``expectations/generation_*.json``) run on two batches of one generation:
*coverage* on the entries (one row per vnode), *format* and *colocation* on the streams
(one row per stream, the lake partition written by the extract step). Checks that need
the ring (optimality: entries equal the ring's vnodes, range ends are ring tokens, one
stream per shard of the owner) or the previous generation (ID reuse) run when those are
known and are listed as skipped otherwise; the result says which ring was used, or that
none was known.

:func:`validate_generation` is what the pipeline calls for an extracted partition;
:func:`validate_description` is the same for a description file (the CLI);
:func:`validate_frames` is the common core on DataFrames. Each returns the one
:class:`~cdcgen.validation.results.ValidationResult`;
``result.raise_if_failed(GenerationInvalid)`` turns a failure into an exception for
callers that prefer one.
"""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from cdcgen.core.ring import Ring, ring_for
from cdcgen.core.time import EPOCH
from cdcgen.core.topology import Node
from cdcgen.extract.description_columns import DescriptionColumns
from cdcgen.extract.description_json import read_description_file
from cdcgen.extract.lake import (
    GenerationArtifact,
    previous_artifact,
    read_artifact,
    write_generation,
)
from cdcgen.extract.spark_extract import entries_frame, read_streams, streams_frame
from cdcgen.extract.streams_table import as_ring, flatten_generation
from cdcgen.spark.session import JobKind, job_session
from cdcgen.validation.gx_runner import run_suites
from cdcgen.validation.results import ValidationResult, summary_text
from cdcgen.validation.suites import GENERATION_SUITES, load_suites

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from cdcgen.config import PipelineConfig

#: Column of the entries batch holding the source reader's objection (null: none).
SOURCE_PROBLEM_COLUMN = "source_problem"
#: The previous generation: a lake partition, a description file or columns; ``"auto"``
#: finds the newest older partition in the same lake.
Previous = Path | DescriptionColumns | None | Literal["auto"]


# --- entry points -----------------------------------------------------------------------


def validate_generation(
    config: PipelineConfig,
    generation_dir: Path,
    *,
    spark: SparkSession | None = None,
    nodes: Sequence[Node] | Ring | None = None,
    previous: Previous = "auto",
    report_dir: Path | None = None,
    expectations_dir: Path | None = None,
) -> ValidationResult:
    """Validate the extracted partition ``<lake>/generations/generation_ts=<ms>``.

    ``nodes`` defaults to the partition's ring (``topology.json``: the ring recorded with
    the generation, if any);
    ``previous="auto"`` compares against the newest older partition in the same lake.
    Data Docs go to ``report_dir`` or ``<config.report_dir>/generation_ts=<ms>/``.
    """
    artifact = read_artifact(generation_dir)
    columns = artifact.read_description()
    session = spark or job_session(JobKind.VALIDATION)
    ring = as_ring(nodes) if nodes is not None else artifact.read_ring()
    if previous == "auto":
        found = previous_artifact(artifact.lake, artifact.timestamp_ms, artifact.table)
        previous = found.directory if found else None
    return validate_frames(
        session,
        read_streams(session, artifact.directory),
        entries_frame(session, columns, ring),
        ring=ring,
        previous_ids=_previous_ids(session, previous),
        report_dir=Path(report_dir or Path(config.report_dir) / artifact.label),
        label=_label(artifact),
        expectations_dir=expectations_dir,
        layout=artifact.layout,
        source_problem=artifact.source_problem,
    )


def validate_description(
    spark: SparkSession,
    columns: DescriptionColumns,
    *,
    report_dir: Path,
    nodes: Sequence[Node] | Ring | None = None,
    previous: DescriptionColumns | Path | None = None,
    timestamp: datetime | None = None,
    generation_id: str = "",
    expectations_dir: Path | None = None,
) -> ValidationResult:
    """Validate a description that is not in the lake (a file given to the CLI).

    It is flattened into a temporary lake partition (pyarrow writes Parquet far faster
    than Spark ingests Arrow batches), then validated exactly like an extraction.
    """
    moment = timestamp or EPOCH
    with tempfile.TemporaryDirectory(prefix="cdcgen-validate-") as lake:
        artifact = write_generation(Path(lake), columns, moment, generation_id, nodes=nodes)
        return validate_frames(
            spark,
            read_streams(spark, artifact.directory),
            entries_frame(spark, columns, nodes),
            ring=as_ring(nodes) if nodes is not None else None,
            previous_ids=_previous_ids(spark, previous),
            report_dir=report_dir,
            label=generation_id or "description",
            expectations_dir=expectations_dir,
        )


def validate_frames(
    spark: SparkSession,
    streams: DataFrame,
    entries: DataFrame,
    *,
    report_dir: Path,
    label: str,
    ring: Ring | None = None,
    previous_ids: DataFrame | None = None,
    expectations_dir: Path | None = None,
    layout: str = "vnodes",
    source_problem: str | None = None,
) -> ValidationResult:
    """Run every suite of ``layout``; ``previous_ids`` is a DataFrame with a ``stream_id``
    column.

    The streams are cached for the run (every check scans them); the previous IDs are
    exposed to the reuse check as a temporary view, dropped afterwards.
    """
    # GX is heavy (and registers the expectation types on import): load it only to run.
    from cdcgen.validation.generation_expectations import PREVIOUS_STREAM_IDS_VIEW

    available = set()
    if ring is not None:
        available.add("topology")
        if ring.shards_known:
            available.add("shard_counts")
    if previous_ids is not None:
        available.add("previous")
        previous_ids.select("stream_id").createOrReplaceTempView(PREVIOUS_STREAM_IDS_VIEW)
    suites = load_suites(expectations_dir, available, layout, GENERATION_SUITES)
    # The source reader's verdict travels as a column, so a GX expectation (and so Data
    # Docs) reports it beside the checks that show, row by row, what is wrong.
    from pyspark.sql import functions as F

    entries = entries.withColumn(SOURCE_PROBLEM_COLUMN, F.lit(source_problem).cast("string"))
    streams = streams.cache()
    try:
        checks, index = run_suites(
            suites,
            {"streams": streams, "entries": entries},
            {"ring_vnode_count": ring.vnode_count} if ring is not None else {},
            Path(report_dir),
            label,
        )
    finally:
        streams.unpersist()
        spark.catalog.dropTempView(PREVIOUS_STREAM_IDS_VIEW)
    skipped = [f"{suite.name}: {name}" for suite in suites for name in suite.skipped]
    ring_note = ""
    if layout == "vnodes":
        chosen, why = ring_for(False, ring, None)
        ring_note = f"validated against {why}" if chosen else why
    summary = summary_text(f"generation {label}", checks, skipped, index)
    return ValidationResult(
        passed=all(check.passed for check in checks),
        checks=checks,
        report_index=index,
        summary=f"{summary}\n  ring: {ring_note}" if ring_note else summary,
        skipped=skipped,
        ring=ring_note,
        ring_known=ring is not None and layout == "vnodes",
    )


# --- helpers ----------------------------------------------------------------------------


def _label(artifact: GenerationArtifact) -> str:
    when = artifact.timestamp.isoformat(timespec="milliseconds").replace("+00:00", "Z")
    if artifact.table:
        return f"{artifact.table} stream set {when} ({artifact.generation_id})"
    return f"{when} ({artifact.generation_id})" if artifact.generation_id else when


def _previous_ids(spark: SparkSession, previous: Previous) -> DataFrame | None:
    """The previous generation's stream IDs, from a lake partition, a JSON file or columns."""
    if previous is None or previous == "auto":
        return None
    if isinstance(previous, DescriptionColumns):
        table = flatten_generation(previous, EPOCH, "")
        return streams_frame(spark, table.select(["stream_id"]))
    path = Path(previous)
    if path.is_dir():
        return read_streams(spark, path).select("stream_id")
    return _previous_ids(spark, read_description_file(path))
