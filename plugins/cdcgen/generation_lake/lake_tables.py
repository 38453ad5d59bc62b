"""The extracted generations in the lake: two Delta tables and their documents.

::

    <lake>/generations/_delta_log/...                       vnode generations, one table
    <lake>/generations/generation_ts=<ms>/part-*.parquet     one row per stream
    <lake>/stream_sets/cdc_table=<keyspace.table>/generation_ts=<ms>/...  tablets
    <lake>/documents/<sha256>.json    descriptions and rings, named by their SHA-256

A row is a stream (:data:`~cdcgen.generation_lake.streams_table.STREAMS_SCHEMA`, entry then
shard order). Each extraction of a generation is one commit replacing its partition
(:mod:`cdcgen.generation_lake.generation_writes`): a reader sees the previous extraction or the new
one, whole, never a mix, and files of a killed extraction belong to no commit.

Every file of an extraction carries its manifest in its Parquet footer: generation id,
counts, the SHA-256 of the description that was flattened and of the ring it was made
for. The documents are written before the commit and never change (their name is
their digest), so a table version names exactly one description: validation reads a
version, publication reads the same version and checks the digest validation recorded,
and what is published is byte for byte what was validated.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TypedDict

from cdcgen.adapters.delta_tables import delta_table, is_delta
from cdcgen.adapters.lake_store import LakeLocation, LakeRoot
from cdcgen.core.generation import Generation
from cdcgen.core.ring import Ring, ring_from_json
from cdcgen.core.time import from_millis
from cdcgen.generation_lake.description_columns import DescriptionColumns
from cdcgen.generation_lake.documents import document_path, read_description_document, read_document
from cdcgen.generation_lake.errors import ArtifactError

GENERATIONS_DIR = "generations"
STREAM_SETS_DIR = "stream_sets"
PARTITION_PREFIX = "generation_ts="
TABLE_PREFIX = "table="
TIMESTAMP_COLUMN = "generation_ts"
TABLE_COLUMN = "cdc_table"
MANIFEST_KEY = b"cdcgen.generation"
VNODES = "vnodes"
TABLETS = "tablets"


class GenerationManifest(TypedDict):
    """What every file of an extraction records in its footer (:data:`MANIFEST_KEY`)."""

    timestamp_ms: int
    generation_id: str
    entry_count: int
    stream_count: int
    description_sha256: str
    ring_sha256: str | None
    table: str | None
    source_problem: str | None


class ArtifactJson(GenerationManifest):
    """An extraction as the extract job reports it: its manifest, its table version and
    files."""

    lake_format: str
    lake_version: int
    files: list[str]
    has_topology: bool


def table_dir(lake: LakeRoot, table: str | None = None) -> LakeLocation:
    """The Delta table of vnode generations, or of the tablets stream sets when
    ``table`` is set (stream sets of different tables may start at the same
    millisecond, so their table is part of their partition)."""
    return LakeLocation.of(lake) / (STREAM_SETS_DIR if table else GENERATIONS_DIR)


def partition_values(timestamp_ms: int, table: str | None = None) -> dict[str, str]:
    """The Delta partition of one generation (or stream set)."""
    values = {TIMESTAMP_COLUMN: str(int(timestamp_ms))}
    if table:
        values = {TABLE_COLUMN: table, **values}
    return values


def partition_predicate(timestamp_ms: int, table: str | None = None) -> str:
    """A SQL predicate selecting exactly that partition (``table`` is checked by the
    writer, :func:`cdcgen.generation_lake.generation_writes.check_table_name`)."""
    terms = [f"{TIMESTAMP_COLUMN} = {int(timestamp_ms)}"]
    if table:
        terms.insert(0, f"{TABLE_COLUMN} = '{table}'")
    return " AND ".join(terms)


@dataclass(frozen=True)
class GenerationArtifact:
    """One extracted generation as a version of its table holds it (its manifest)."""

    lake: LakeLocation
    version: int
    timestamp_ms: int
    generation_id: str
    entry_count: int
    stream_count: int
    description_sha256: str
    ring_sha256: str | None = None
    table: str | None = None  # ``keyspace.table`` of a tablets stream set
    #: Why the source reader refused the stored rows (extracted anyway, for the report).
    source_problem: str | None = None
    files: tuple[LakeLocation, ...] = field(default=(), compare=False)

    @property
    def generation(self) -> Generation:
        """The generation this partition holds."""
        return Generation(self.timestamp, self.generation_id, self.table or "")

    @property
    def layout(self) -> str:
        """``tablets`` (one stream per tablet, per table) or ``vnodes`` (a generation)."""
        return TABLETS if self.table else VNODES

    @property
    def root(self) -> LakeLocation:
        """The Delta table holding it."""
        return table_dir(self.lake, self.table)

    @property
    def directory(self) -> LakeLocation:
        """The partition's folder (where its files are; what is in it is the log's say)."""
        folder = self.root
        for key, value in partition_values(self.timestamp_ms, self.table).items():
            folder = folder / f"{key}={value}"
        return folder

    @property
    def timestamp(self) -> datetime:
        return from_millis(self.timestamp_ms)

    @property
    def has_topology(self) -> bool:
        return self.ring_sha256 is not None

    @property
    def label(self) -> str:
        """The generation's name in reports: ``generation_ts=<ms>``, or
        ``table=<keyspace.table>/generation_ts=<ms>``."""
        name = f"{PARTITION_PREFIX}{self.timestamp_ms}"
        return f"{TABLE_PREFIX}{self.table}/{name}" if self.table else name

    @property
    def description_path(self) -> LakeLocation:
        return document_path(self.lake, self.description_sha256)

    def read_description(self) -> DescriptionColumns:
        """The description, after checking it is the one that was extracted."""
        return read_description_document(self.lake, self.description_sha256)

    def read_ring(self) -> Ring | None:
        """The ring the generation was made for, if the extraction knew it."""
        if self.ring_sha256 is None:
            return None
        return ring_from_json(json.loads(read_document(self.lake, self.ring_sha256)))

    def manifest(self) -> GenerationManifest:
        """What each file's footer records (:data:`MANIFEST_KEY`)."""
        return GenerationManifest(
            timestamp_ms=self.timestamp_ms,
            generation_id=self.generation_id,
            entry_count=self.entry_count,
            stream_count=self.stream_count,
            description_sha256=self.description_sha256,
            ring_sha256=self.ring_sha256,
            table=self.table,
            source_problem=self.source_problem,
        )

    def to_json(self) -> ArtifactJson:
        return ArtifactJson(
            **self.manifest(),
            lake_format="delta",
            lake_version=self.version,
            files=[str(path) for path in self.files],
            has_topology=self.has_topology,
        )


def read_artifact(
    lake: LakeRoot, generation: Generation, version: int | None = None
) -> GenerationArtifact:
    """``generation`` as its table holds it at ``version`` (default: the latest)."""
    check_layout(lake)
    return read_partition(lake, generation.ms, generation.table or None, version)


def artifact_at(directory: LakeRoot) -> GenerationArtifact:
    """The latest extraction of the partition folder ``directory`` (as
    :attr:`GenerationArtifact.directory` names it, e.g. on the command line)."""
    directory = LakeLocation.of(directory)
    if not directory.name.startswith(PARTITION_PREFIX):
        raise ArtifactError(f"{directory} is not a generation's partition ({PARTITION_PREFIX}…)")
    millis = directory.name[len(PARTITION_PREFIX) :]
    parent = directory.parent
    if parent.name.startswith(f"{TABLE_COLUMN}="):
        table, lake = parent.name.split("=", 1)[1], parent.parent.parent
    else:
        table, lake = None, parent.parent
    if not millis.isdigit():
        raise ArtifactError(f"{directory}: {millis!r} is not a timestamp in milliseconds")
    check_layout(lake)
    return read_partition(lake, int(millis), table, None)


def read_partition(
    lake: LakeRoot, millis: int, table: str | None, version: int | None
) -> GenerationArtifact:
    """The partition's manifest and files at ``version``, checked against each other."""
    import pyarrow.parquet as pq

    lake = LakeLocation.of(lake)
    root = table_dir(lake, table)
    where = f"{table + ' stream set ' if table else 'generation '}{millis}"
    if not is_delta(root):
        raise ArtifactError(f"{root} holds no extracted generation: extract {where} first")
    log = delta_table(root, version)
    uris = log.file_uris(file_pruning_predicate=partition_predicate(millis, table))
    files = sorted(LakeLocation.of(uri) for uri in uris)
    if not files:
        at = "" if version is None else f" at version {version}"
        raise ArtifactError(f"{root}{at} holds no {where}: run the extract step first")
    try:
        footers = [pq.read_metadata(p, filesystem=fs) for fs, p in (f.arrow() for f in files)]
        raw = json.loads((footers[0].metadata or {})[MANIFEST_KEY])
        artifact = GenerationArtifact(
            lake=lake,
            version=int(log.version()),
            timestamp_ms=int(raw["timestamp_ms"]),
            generation_id=str(raw["generation_id"]),
            entry_count=int(raw["entry_count"]),
            stream_count=int(raw["stream_count"]),
            description_sha256=str(raw["description_sha256"]),
            ring_sha256=raw.get("ring_sha256") or None,
            table=raw.get("table") or None,
            source_problem=raw.get("source_problem") or None,
            files=tuple(files),
        )
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ArtifactError(f"{files[0]}: no readable manifest in its footer: {exc}") from exc
    rows = sum(footer.num_rows for footer in footers)
    if rows != artifact.stream_count or (artifact.timestamp_ms, artifact.table) != (millis, table):
        raise ArtifactError(
            f"{root}: {where} holds {rows} rows of {artifact.label}, its manifest says "
            f"{artifact.stream_count} of generation_ts={millis}"
        )
    return artifact


def list_artifacts(lake: LakeRoot, table: str | None = None) -> list[GenerationArtifact]:
    """Every extracted vnode generation (or ``table``'s stream sets), oldest first."""
    check_layout(lake)
    root = table_dir(lake, table)
    if not is_delta(root):
        return []
    found = []
    for values in delta_table(root).partitions():
        if table and values.get(TABLE_COLUMN) != table:
            continue
        found.append(read_partition(lake, int(str(values[TIMESTAMP_COLUMN])), table, None))
    return sorted(found, key=lambda a: a.timestamp_ms)


def previous_artifact(
    lake: LakeRoot, timestamp_ms: int, table: str | None = None
) -> GenerationArtifact | None:
    """The newest extracted generation (of the same table) older than ``timestamp_ms``."""
    older = [a for a in list_artifacts(lake, table) if a.timestamp_ms < timestamp_ms]
    return older[-1] if older else None


def parquet_partitions(lake: LakeRoot) -> list[Path]:
    """Partitions of the Parquet layout of earlier versions (a ``_manifest.json`` each);
    that layout was local only, so a lake on S3 has none."""
    lake = LakeLocation.of(lake)
    if not lake.is_local:
        return []
    base = lake.path / GENERATIONS_DIR
    found = [*base.glob(f"{PARTITION_PREFIX}*"), *base.glob(f"{TABLE_PREFIX}*/{PARTITION_PREFIX}*")]
    return sorted(p for p in found if (p / "_manifest.json").is_file())


def check_layout(lake: LakeRoot) -> None:
    """Refuse a lake whose generations are still in the Parquet layout."""
    if parquet_partitions(lake):
        raise ArtifactError(
            f"{LakeLocation.of(lake) / GENERATIONS_DIR} holds generations as plain Parquet from an "
            "earlier version of cdcgen: convert them once with `cdcgen lake migrate`"
        )


class LocalGenerationLake:
    """:class:`cdcgen.ports.GenerationLake` over the generations tables of a lake.

    The rows come from the description document of the version validation read, checked
    against the digest validation recorded and against the document's own name.
    """

    def __init__(self, root: LakeRoot) -> None:
        self.root = LakeLocation.of(root)

    def stream_rows(
        self, generation: Generation, version: int | None = None, digest: str | None = None
    ) -> list[tuple[int, list[bytes]]]:
        artifact = read_artifact(self.root, generation, version)
        if digest is not None and artifact.description_sha256 != digest:
            raise ArtifactError(
                f"{generation.label}: version {artifact.version} of {artifact.root} holds "
                f"description {artifact.description_sha256}, validation checked {digest}"
            )
        return artifact.read_description().stream_rows()
