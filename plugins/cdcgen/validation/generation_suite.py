"""Validate one generation with the GX suites: the gate before publication.

Three suites (``expectations/generation_*.json``) run on two batches of one generation:
*coverage* on the entries (one row per vnode), *format* and *colocation* on the streams
(one row per stream, the version of the generations table the extract step
committed). Checks that need the ring (optimality: entries equal the ring's vnodes,
range ends are ring tokens, one stream per shard of the owner) or the previous
generation (ID reuse) run when those are known and are listed as skipped otherwise;
the result says which ring was used, or that none was known.

How, in three steps. (1) One pass computes every rule's flag per row (the rules of
:mod:`.generation_rules`) and keeps the entries and the offending streams: in SQLite for
a small generation, on Spark for a large one. (2) Those rows go to one SQLite file
(both steps: :mod:`.generation_flags`). (3) GX runs the suites on
it: each rule's expectation selects the rows with its flag, GX counts them, decides and
renders Data Docs. A million valid streams leave an empty streams table, so GX's work
no longer grows with the generation, and a small validation starts no JVM at all.

:func:`validate_generation` is what the pipeline calls for an extracted partition;
:func:`validate_description` is the same for a description file (the CLI). Each
returns the one :class:`~cdcgen.validation.results.ValidationResult`; the pipeline
turns a failure into :class:`~cdcgen.pipeline.errors.GenerationRejected`, which carries
the outcome the report shows.
"""

from __future__ import annotations

import logging
import tempfile
import time
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from cdcgen.core.ring import Ring, ring_for
from cdcgen.core.time import EPOCH
from cdcgen.core.topology import Node
from cdcgen.generation_lake.description_columns import DescriptionColumns
from cdcgen.generation_lake.generation_writes import write_generation
from cdcgen.generation_lake.lake_tables import GenerationArtifact, previous_artifact
from cdcgen.generation_lake.streams_table import as_ring, flatten_generation
from cdcgen.validation import generation_flags as flags
from cdcgen.validation.generation_flags import (
    Engine,
    GenerationBatches,
    SparkSource,
    choose_engine,
    flag_into,
)
from cdcgen.validation.gx_runner import SqliteTables, run_suites, start_gx_import
from cdcgen.validation.results import ValidationResult, summary_text
from cdcgen.validation.suites import GENERATION_SUITES, load_suites

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from cdcgen.config import PipelineConfig

log = logging.getLogger(__name__)

#: The previous generation: an extracted one, a description file or columns; ``"auto"``
#: finds the newest older one in the same lake.
Previous = GenerationArtifact | Path | DescriptionColumns | None | Literal["auto"]


# --- entry points -----------------------------------------------------------------------


def validate_generation(
    config: PipelineConfig,
    artifact: GenerationArtifact,
    *,
    spark: SparkSession | None = None,
    nodes: Sequence[Node] | Ring | None = None,
    previous: Previous = "auto",
    report_dir: Path | None = None,
    expectations_dir: Path | None = None,
    engine: str | None = None,
) -> ValidationResult:
    """Validate an extracted generation: exactly the files of the version it was read at.

    ``nodes`` defaults to the generation's ring (the one recorded with it, if any);
    ``previous="auto"`` compares against the newest older generation in the same lake.
    Data Docs go to ``report_dir`` or ``<config.report_dir>/generation_ts=<ms>/``.
    ``engine`` overrides ``config.validation_engine``; a Spark session is started only
    if the Spark engine runs and ``spark`` is not given.
    """
    ring = as_ring(nodes) if nodes is not None else artifact.read_ring()
    if previous == "auto":
        found = previous_artifact(artifact.lake, artifact.timestamp_ms, artifact.table)
        previous = found
    chosen = choose_engine(
        engine or config.validation_engine,
        artifact.stream_count,
        config.validation_sql_max_streams,
    )
    batches = GenerationBatches(
        streams=artifact,
        entries=lambda: flags.entries_batch(
            artifact.read_description(), ring, artifact.source_problem
        ),
        previous=flags.previous_rows(previous),
        ring=ring,
        layout=artifact.layout,
        scratch=artifact.lake.path if artifact.lake.is_local else None,
    )
    return _validate(
        batches,
        chosen,
        _spark_source(spark),
        report_dir=Path(report_dir or Path(config.report_dir) / artifact.label),
        label=_label(artifact),
        expectations_dir=expectations_dir,
    )


def validate_description(
    spark: SparkSession | None,
    columns: DescriptionColumns,
    *,
    report_dir: Path,
    nodes: Sequence[Node] | Ring | None = None,
    previous: DescriptionColumns | Path | None = None,
    timestamp: datetime | None = None,
    generation_id: str = "",
    expectations_dir: Path | None = None,
    config: PipelineConfig | None = None,
    engine: str | None = None,
) -> ValidationResult:
    """Validate a description that is not in the lake (a file given to the CLI).

    The engine comes from ``engine``, else ``config`` (default: the defaults). SQLite
    reads the description flattened in memory; for Spark it is flattened into a
    temporary lake partition (pyarrow writes Parquet far faster than Spark ingests Arrow
    batches), then validated exactly like an extraction.
    """
    from cdcgen.config import PipelineConfig

    settings = config or PipelineConfig()
    chosen = choose_engine(
        engine or settings.validation_engine,
        columns.stream_count,
        settings.validation_sql_max_streams,
    )
    moment = timestamp or EPOCH
    ring = as_ring(nodes) if nodes is not None else None

    def run(streams: flags.Rows, scratch: Path | None) -> ValidationResult:
        batches = GenerationBatches(
            streams=streams,
            entries=lambda: flags.entries_batch(columns, ring, None),
            previous=flags.previous_rows(previous),
            ring=ring,
            layout="vnodes",
            scratch=scratch,
        )
        return _validate(
            batches,
            chosen,
            _spark_source(spark),
            report_dir=report_dir,
            label=generation_id or "description",
            expectations_dir=expectations_dir,
        )

    if chosen == "sql":
        return run(flatten_generation(columns, moment, generation_id), None)
    with tempfile.TemporaryDirectory(prefix="cdcgen-validate-") as lake:
        artifact = write_generation(Path(lake), columns, moment, generation_id)
        return run(artifact, Path(lake))


# --- the three steps (1 and 2: cdcgen.validation.generation_flags) -----------------------


def _validate(
    batches: GenerationBatches,
    engine: Engine,
    spark: SparkSource,
    *,
    report_dir: Path,
    label: str,
    expectations_dir: Path | None,
) -> ValidationResult:
    """Flag the rows with ``engine``, store them in SQLite, run every suite of the layout."""
    ring = batches.ring
    available = set()
    if ring is not None:
        available.add("topology")
        if ring.shards_known:
            available.add("shard_counts")
    if batches.previous is not None:
        available.add("previous")
    suites = load_suites(expectations_dir, available, batches.layout, GENERATION_SUITES)
    start_gx_import()  # overlaps the flag pass
    with tempfile.TemporaryDirectory(prefix="cdcgen-batches-") as work:
        database = Path(work) / "batches.sqlite"
        started = time.monotonic()
        flag_into(database, batches, suites, engine, spark)
        log.info("rows flagged (%s engine) in %.1f s", engine, time.monotonic() - started)
        checks, index = run_suites(
            suites,
            SqliteTables(database),
            {"ring_vnode_count": ring.vnode_count} if ring is not None else {},
            Path(report_dir),
            label,
        )
    skipped = [f"{suite.name}: {name}" for suite in suites for name in suite.skipped]
    ring_note = ""
    if batches.layout == "vnodes":
        chosen, why = ring_for(ring)
        ring_note = f"validated against {why}" if chosen else why
    summary = summary_text(f"generation {label}", checks, skipped, index)
    return ValidationResult(
        passed=all(check.passed for check in checks),
        checks=checks,
        report_index=index,
        summary=f"{summary}\n  ring: {ring_note}" if ring_note else summary,
        skipped=skipped,
        ring=ring_note,
        ring_known=ring is not None and batches.layout == "vnodes",
    )


# --- helpers ----------------------------------------------------------------------------


def _spark_source(spark: SparkSession | None) -> SparkSource:
    """``spark`` itself, or a validation session started when first asked for."""
    if spark is not None:
        session = spark
        return lambda: session

    def start() -> SparkSession:
        from cdcgen.spark_runtime.session import JobKind, job_session

        return job_session(JobKind.VALIDATION)

    return start


def _label(artifact: GenerationArtifact) -> str:
    when = artifact.timestamp.isoformat(timespec="milliseconds").replace("+00:00", "Z")
    if artifact.table:
        return f"{artifact.table} stream set {when} ({artifact.generation_id})"
    return f"{when} ({artifact.generation_id})" if artifact.generation_id else when
