"""Run records for the report site: what validate and publish saw, per generation.

The report site (:mod:`cdcgen.reports`) renders only from the JSON records in
``<report_dir>/runs/``.  Validate records every outcome, pass or fail (so a rejected
generation's page shows the failed expectations and links its Data Docs); publish
records the same generation again with ``published=True``.  The ring picture is
drawn from the extracted description when it is a valid one; a corrupt
description gets counts only.  Publish takes the ring and counts from the record
validate wrote in the same DAG run: what is published is exactly what was validated,
so reading and drawing 1.6M streams again would only repeat it.
"""

from __future__ import annotations

from pathlib import Path

from cdcgen.adapters.lake_store import LakeRoot
from cdcgen.config import PipelineConfig
from cdcgen.core.generation import Generation
from cdcgen.generation_lake.errors import ArtifactError
from cdcgen.generation_lake.lake_tables import read_artifact
from cdcgen.pipeline.outcomes import ValidationOutcome
from cdcgen.reports.adapters import owners_from_nodes, ring_from_arrays
from cdcgen.reports.records import (
    GenerationCounts,
    GenerationReport,
    RingEntry,
    RunStatus,
    generation_record_key,
)
from cdcgen.reports.site import load_record, record_run


def record_generation(
    config: PipelineConfig,
    generation: Generation,
    validation: ValidationOutcome,
    *,
    published: bool,
    dag_id: str = "",
    run_id: str = "",
) -> str:
    """Write one :class:`GenerationReport` and rebuild the site; returns the page path."""
    validated = _validated_record(config, generation, run_id) if published else None
    if validated is not None:
        ring, counts = validated.ring, validated.counts
    else:
        ring, counts = ring_and_counts(config.lake_path, generation, validation.lake_version)
    record = GenerationReport(
        generation_id=generation.id,
        generation_time=generation.timestamp,
        status=RunStatus.SUCCESS if validation.passed else RunStatus.FAILED,
        expectations=validation.expectations,
        ring=ring,
        counts=counts,
        dag_id=dag_id,
        run_id=run_id,
        published=published,
        data_docs_path=validation.data_docs or "",
        source=f"{config.source_mode} ({config.source_keyspace_prefix or 'ScyllaDB'} schema)",
        lake_version=validation.lake_version,
        description_sha256=validation.description_sha256 or "",
        notes=(f"ring: {validation.ring}", *validation.skipped)
        if validation.ring
        else validation.skipped,
    )
    return str(record_run(Path(config.report_dir), record, keep_runs=config.report_keep_runs))


def _validated_record(
    config: PipelineConfig, generation: Generation, run_id: str
) -> GenerationReport | None:
    """The record validate wrote for ``generation`` in DAG run ``run_id`` (None for a
    manual run, whose records of other runs share the key)."""
    if not run_id:
        return None
    key = generation_record_key(generation.timestamp, generation.id, run_id)
    record = load_record(Path(config.report_dir), key)
    return record if isinstance(record, GenerationReport) else None


def ring_and_counts(
    lake: LakeRoot, generation: Generation, version: int | None = None
) -> tuple[tuple[RingEntry, ...], GenerationCounts | None]:
    """The ring picture and counts of an extracted generation (none if it was not), as
    the lake's ``version`` holds it (default: the latest)."""
    try:
        artifact = read_artifact(lake, generation, version)
        columns = artifact.read_description()
        ring = artifact.read_ring()
    except ArtifactError:
        return (), None
    counts = GenerationCounts(
        entries=artifact.entry_count,
        streams=artifact.stream_count,
        nodes=len(ring.live_nodes) if ring else 0,
        shards=sum(n.shard_count or 0 for n in ring.live_nodes) if ring else 0,
    )
    arrays = columns.to_arrays()
    if arrays is None:
        return (), counts  # corrupt: no ring picture, the counts still say what was there
    owners = owners_from_nodes((n.name, n.tokens) for n in ring.nodes) if ring else None
    return ring_from_arrays(arrays, owners), counts
