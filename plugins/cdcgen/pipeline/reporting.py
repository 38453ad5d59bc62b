"""Run records for the report site: what validate and publish saw, per generation.

The report site (:mod:`cdcgen.reports`) renders only from the JSON records in
``<report_dir>/runs/``.  Validate records every outcome, pass or fail (so a rejected
generation's page shows the failed expectations and links its Data Docs); publish
records the same generation again with ``published=True``.  The ring picture is
drawn from the extracted description when it is a valid one; a corrupt
description gets counts only.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from cdcgen.config import PipelineConfig
from cdcgen.core.topology import InvalidDescription
from cdcgen.reports.adapters import owners_from_nodes, ring_from_description
from cdcgen.reports.records import (
    ExpectationOutcome,
    GenerationCounts,
    GenerationReport,
    RingEntry,
    RunStatus,
)
from cdcgen.reports.site import record_run
from cdcgen.validation.results import CheckOutcome, row_text

#: Offending rows quoted per check in the record (its Data Docs list them all).
ROWS_QUOTED = 3


def expectations_json(checks: Sequence[CheckOutcome]) -> list[dict[str, object]]:
    """Validation checks as plain JSON (they travel through XCom to publish)."""
    out: list[dict[str, object]] = []
    for check in checks:
        samples = "; ".join(row_text(row) for row in check.samples[:ROWS_QUOTED])
        details = check.describe() + (f" e.g. {samples}" if samples else "")
        out.append({"name": check.check, "passed": bool(check.passed), "details": details})
    return out


def record_generation(
    config: PipelineConfig,
    generation: Mapping[str, Any],
    generation_dir: Path,
    validation: Mapping[str, Any],
    *,
    published: bool,
    dag_id: str = "",
    run_id: str = "",
) -> str:
    """Write one :class:`GenerationReport` and rebuild the site; returns the page path."""
    ring, counts = _ring_and_counts(generation_dir)
    record = GenerationReport(
        generation_id=str(generation["id"]),
        generation_time=datetime.fromtimestamp(int(generation["timestamp_ms"]) / 1000, tz=UTC),
        status=RunStatus.SUCCESS if validation.get("passed") else RunStatus.FAILED,
        expectations=tuple(
            ExpectationOutcome(name=e["name"], passed=e["passed"], details=e.get("details", ""))
            for e in validation.get("expectations", ())
        ),
        ring=ring,
        counts=counts,
        dag_id=dag_id,
        run_id=run_id,
        published=published,
        data_docs_path=str(validation.get("report") or ""),
        source=f"{config.source_mode} ({config.source_keyspace_prefix or 'ScyllaDB'} schema)",
        notes=tuple(validation.get("skipped", ())),
    )
    return str(record_run(Path(config.report_dir), record))


def _ring_and_counts(
    generation_dir: Path,
) -> tuple[tuple[RingEntry, ...], GenerationCounts | None]:
    """The ring picture and the counts of an extracted generation, as far as readable."""
    # pyarrow (the lake's Parquet) is heavy: load it only when a record is written.
    from cdcgen.extract.lake import ArtifactError, read_artifact

    try:
        artifact = read_artifact(generation_dir)
        columns = artifact.read_description()
        nodes = artifact.read_nodes()
    except ArtifactError:
        return (), None
    counts = GenerationCounts(
        entries=artifact.entry_count,
        streams=artifact.stream_count,
        nodes=len(nodes) if nodes else 0,
        shards=sum(n.shard_count for n in nodes) if nodes else 0,
    )
    try:
        description = columns.to_description()
    except (InvalidDescription, ValueError):
        return (), counts  # corrupt: no ring picture, the counts still say what was there
    owners = owners_from_nodes((n.name, n.tokens) for n in nodes) if nodes else None
    return ring_from_description(description, owners), counts
