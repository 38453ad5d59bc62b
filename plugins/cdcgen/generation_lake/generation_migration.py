"""Converting generations extracted in the Parquet layout of earlier versions.

Each old partition (Parquet files, ``description.json``, ``topology.json``, a
``_manifest.json`` written last) is extracted again from its own description into the
Delta table, one commit each; only then are its old files removed, the manifest
last. A conversion killed half way is run again: partitions still holding a manifest
are converted again (the same content, so the same rows), nothing is lost.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import TypedDict

from cdcgen.core.ring import ring_from_json
from cdcgen.core.time import from_millis
from cdcgen.generation_lake.description_json import columns_from_json
from cdcgen.generation_lake.errors import ArtifactError
from cdcgen.generation_lake.generation_writes import write_extraction
from cdcgen.generation_lake.lake_tables import parquet_partitions

OLD_MANIFEST = "_manifest.json"
OLD_DESCRIPTION = "description.json"
OLD_TOPOLOGY = "topology.json"


class PartitionConversion(TypedDict):
    """One converted partition, as ``cdcgen lake migrate`` prints it."""

    generation: str
    converted: bool
    version: int
    streams: int


def migrate_generations(lake: Path) -> list[PartitionConversion]:
    """Convert every Parquet partition of ``lake``; one summary per generation."""
    return [migrate_partition(Path(lake), directory) for directory in parquet_partitions(lake)]


def migrate_partition(lake: Path, directory: Path) -> PartitionConversion:
    """Convert one old partition, checking its description against its manifest."""
    try:
        manifest = json.loads((directory / OLD_MANIFEST).read_text(encoding="utf-8"))
        raw = (directory / OLD_DESCRIPTION).read_bytes()
        if hashlib.sha256(raw).hexdigest() != manifest["description_sha256"]:
            raise ArtifactError(f"{directory / OLD_DESCRIPTION} does not match its manifest")
        topology = directory / OLD_TOPOLOGY
        ring = None
        if manifest.get("has_topology"):
            ring = ring_from_json(json.loads(topology.read_text(encoding="utf-8")))
        artifact = write_extraction(
            lake,
            columns_from_json(json.loads(raw)),
            from_millis(int(manifest["timestamp_ms"])),
            str(manifest["generation_id"]),
            nodes=ring,
            table=manifest.get("table") or None,
            source_problem=manifest.get("source_problem") or None,
        )
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ArtifactError(f"{directory}: cannot convert this partition: {exc}") from exc
    for name in [*manifest.get("files", []), OLD_DESCRIPTION, OLD_TOPOLOGY, OLD_MANIFEST]:
        (directory / Path(name).name).unlink(missing_ok=True)
    if not any(directory.iterdir()):
        directory.rmdir()  # a tablets partition: its data now lives in the other table
        if directory.parent.name.startswith("table=") and not any(directory.parent.iterdir()):
            directory.parent.rmdir()
    return PartitionConversion(
        generation=artifact.label,
        converted=True,
        version=artifact.version,
        streams=artifact.stream_count,
    )
