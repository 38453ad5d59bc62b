"""The lake layout of an extracted generation, written atomically and read back verified.

::

    <lake>/generations/generation_ts=<ms>/                       a vnode generation
    <lake>/generations/table=<keyspace.table>/generation_ts=<ms>/  a tablets stream set
        part-00000.parquet ...   one row per stream (STREAMS_SCHEMA), entry then shard order
        description.json         the exact description that was flattened (and is published)
        topology.json            the ring it was made for, when known (the ring checks need it)
        _manifest.json           id, counts, SHA-256 of description.json; written last

Files are written with pyarrow into a hidden staging directory that then replaces the
partition by rename, so a re-run overwrites that partition only (idempotent) and a
reader never sees half a generation. Spark skips names starting with ``_`` or ``.``; it
must read the Parquet files with ``pathGlobFilter=*.parquet`` because of the JSON files
(see :func:`cdcgen.extract.spark_extract.read_streams`). Publication reads
``description.json`` and checks it against the manifest's hash, so what is published is
byte for byte what was validated.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

from cdcgen.core.generation import Generation
from cdcgen.core.ring import Ring, ring_from_json, ring_to_json
from cdcgen.core.time import from_millis
from cdcgen.core.topology import Node
from cdcgen.extract.description_columns import DescriptionColumns
from cdcgen.extract.description_json import columns_from_json, write_description_file
from cdcgen.extract.streams_table import flatten_generation, timestamp_millis

GENERATIONS_DIR = "generations"
PARTITION_PREFIX = "generation_ts="
TABLE_PREFIX = "table="
VNODES = "vnodes"
TABLETS = "tablets"
DESCRIPTION_FILE = "description.json"
TOPOLOGY_FILE = "topology.json"
MANIFEST_FILE = "_manifest.json"
PARQUET_GLOB = "*.parquet"
ROWS_PER_FILE = 262_144
"""About 9 MB of Parquet per file: enough files for both local cores to read in parallel."""


class ArtifactError(Exception):
    """Terminal: a lake partition that is missing, incomplete or altered since extraction."""


def partition_dir(lake: Path, timestamp_ms: int, table: str | None = None) -> Path:
    """Where one generation goes; a tablets stream set (``table`` set) under its table.

    Stream sets of different tables may start at the same millisecond, so the table is
    part of the path; vnode generations are cluster-wide and keyed by timestamp alone.
    """
    base = Path(lake) / GENERATIONS_DIR
    if table:
        base = base / f"{TABLE_PREFIX}{table}"
    return base / f"{PARTITION_PREFIX}{int(timestamp_ms)}"


@dataclass(frozen=True)
class GenerationArtifact:
    """One extracted generation in the lake (what ``_manifest.json`` records)."""

    directory: Path
    timestamp_ms: int
    generation_id: str
    entry_count: int
    stream_count: int
    description_sha256: str
    files: tuple[str, ...]
    has_topology: bool
    table: str | None = None  # ``keyspace.table`` of a tablets stream set
    #: Why the source reader refused the stored rows (extracted anyway, for the report).
    source_problem: str | None = None

    @property
    def generation(self) -> Generation:
        """The generation this partition holds."""
        return Generation(self.timestamp, self.generation_id, self.table or "")

    @property
    def layout(self) -> str:
        """``tablets`` (one stream per tablet, per table) or ``vnodes`` (a generation)."""
        return TABLETS if self.table else VNODES

    @property
    def lake(self) -> Path:
        """The lake root this partition belongs to (see :func:`partition_dir`)."""
        return self.directory.parents[2 if self.table else 1]

    @property
    def timestamp(self) -> datetime:
        return from_millis(self.timestamp_ms)

    @property
    def label(self) -> str:
        """The partition's path under ``generations/``, also used for its reports:
        ``generation_ts=<ms>``, or ``table=<keyspace.table>/generation_ts=<ms>``."""
        if self.table:
            return f"{TABLE_PREFIX}{self.table}/{self.directory.name}"
        return self.directory.name

    @property
    def description_path(self) -> Path:
        return self.directory / DESCRIPTION_FILE

    def read_description(self) -> DescriptionColumns:
        """The description, after checking it is the one that was extracted."""
        try:
            raw = self.description_path.read_bytes()
        except OSError as exc:
            raise ArtifactError(f"{self.description_path}: {exc.strerror or exc}") from exc
        digest = hashlib.sha256(raw).hexdigest()
        if digest != self.description_sha256:
            raise ArtifactError(
                f"{self.description_path} changed since extraction (sha256 {digest}, "
                f"manifest says {self.description_sha256}); extract the generation again"
            )
        return columns_from_json(json.loads(raw))

    def read_ring(self) -> Ring | None:
        """The ring the generation was made for, if the extraction knew it."""
        if not self.has_topology:
            return None
        path = self.directory / TOPOLOGY_FILE
        return ring_from_json(json.loads(path.read_text(encoding="utf-8")))

    def to_json(self) -> dict[str, Any]:
        return {
            "timestamp_ms": self.timestamp_ms,
            "generation_id": self.generation_id,
            "entry_count": self.entry_count,
            "stream_count": self.stream_count,
            "description_sha256": self.description_sha256,
            "files": list(self.files),
            "has_topology": self.has_topology,
            "table": self.table,
            "source_problem": self.source_problem,
        }


def write_generation(
    lake: Path,
    columns: DescriptionColumns,
    timestamp: datetime,
    generation_id: str,
    *,
    nodes: Sequence[Node] | Ring | None = None,
    table: str | None = None,
    source_problem: str | None = None,
    rows_per_file: int = ROWS_PER_FILE,
) -> GenerationArtifact:
    """Flatten and write one generation's partition, replacing any previous extraction.

    ``nodes`` is the ring it was made for, if known; ``table`` (``keyspace.table``) marks
    a tablets stream set of that table.
    """
    millis = timestamp_millis(timestamp)
    final = partition_dir(lake, millis, table)
    final.parent.mkdir(parents=True, exist_ok=True)
    token = uuid.uuid4().hex[:12]
    staging = final.parent / f".staging-{final.name}-{token}"
    staging.mkdir()
    try:
        rows = flatten_generation(columns, timestamp, generation_id)
        files = []
        for number, offset in enumerate(range(0, max(rows.num_rows, 1), rows_per_file)):
            name = f"part-{number:05d}.parquet"
            pq.write_table(rows.slice(offset, rows_per_file), staging / name, compression="snappy")
            files.append(name)
        del rows
        write_description_file(staging / DESCRIPTION_FILE, columns)
        if nodes is not None:
            ring = nodes if isinstance(nodes, Ring) else Ring.of_nodes(nodes)
            (staging / TOPOLOGY_FILE).write_text(json.dumps(ring_to_json(ring)), encoding="utf-8")
        artifact = GenerationArtifact(
            directory=final,
            timestamp_ms=millis,
            generation_id=generation_id,
            entry_count=columns.entry_count,
            stream_count=columns.stream_count,
            description_sha256=hashlib.sha256(
                (staging / DESCRIPTION_FILE).read_bytes()
            ).hexdigest(),
            files=tuple(files),
            has_topology=nodes is not None,
            table=table or None,
            source_problem=source_problem,
        )
        (staging / MANIFEST_FILE).write_text(
            json.dumps(artifact.to_json(), indent=1), encoding="utf-8"
        )
        _replace(staging, final)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return artifact


def _replace(staging: Path, final: Path) -> None:
    """Swap ``staging`` in as ``final`` with renames (atomic each on a local filesystem)."""
    if not final.exists():
        staging.rename(final)
        return
    trash = final.parent / f".trash-{final.name}-{uuid.uuid4().hex[:12]}"
    final.rename(trash)
    staging.rename(final)
    shutil.rmtree(trash, ignore_errors=True)


def read_artifact(directory: Path) -> GenerationArtifact:
    """The manifest of an extracted partition; a missing one means no complete extraction."""
    directory = Path(directory)
    manifest = directory / MANIFEST_FILE
    try:
        raw = json.loads(manifest.read_text(encoding="utf-8"))
        return GenerationArtifact(
            directory=directory,
            timestamp_ms=int(raw["timestamp_ms"]),
            generation_id=str(raw["generation_id"]),
            entry_count=int(raw["entry_count"]),
            stream_count=int(raw["stream_count"]),
            description_sha256=str(raw["description_sha256"]),
            files=tuple(raw["files"]),
            has_topology=bool(raw.get("has_topology", False)),
            table=raw.get("table") or None,
            source_problem=raw.get("source_problem") or None,
        )
    except FileNotFoundError:
        raise ArtifactError(
            f"{directory} holds no extracted generation ({MANIFEST_FILE} missing): "
            "run the extract step first"
        ) from None
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ArtifactError(f"{manifest} is unreadable: {exc}") from exc


def list_artifacts(lake: Path, table: str | None = None) -> list[GenerationArtifact]:
    """Every complete extraction of the vnode generations (or of ``table``'s stream sets),
    oldest first; incomplete ones are ignored."""
    base = partition_dir(lake, 0, table).parent
    found = []
    for child in base.glob(f"{PARTITION_PREFIX}*"):
        if (child / MANIFEST_FILE).is_file():
            found.append(read_artifact(child))
    return sorted(found, key=lambda a: a.timestamp_ms)


def previous_artifact(
    lake: Path, timestamp_ms: int, table: str | None = None
) -> GenerationArtifact | None:
    """The newest extracted generation (of the same table) older than ``timestamp_ms``."""
    older = [a for a in list_artifacts(lake, table) if a.timestamp_ms < timestamp_ms]
    return older[-1] if older else None


def generation_dir(lake: Path, generation: Generation) -> Path:
    """Where ``generation`` is extracted (:func:`partition_dir` of its timestamp and table)."""
    return partition_dir(lake, generation.ms, generation.table or None)


class LocalGenerationLake:
    """:class:`cdcgen.ports.GenerationLake` over the partitions of a lake folder.

    The rows come from ``description.json``, checked against the hash the extract step
    recorded in the manifest: what is published is byte for byte what was validated.
    """

    def __init__(self, root: Path) -> None:
        self.root = Path(root)

    def stream_rows(self, generation: Generation) -> list[tuple[int, list[bytes]]]:
        artifact = read_artifact(generation_dir(self.root, generation))
        return artifact.read_description().stream_rows()
