"""Writing one extracted generation: documents, then files, then one commit.

The order is what makes a killed extraction harmless:

1. the description (and ring) documents, named by their SHA-256: written whole, never
   changed, so writing one again is a no-op;
2. the Parquet files, with pyarrow, each footer carrying the manifest: files no commit
   names are invisible to every reader (and removed by the lake's vacuum);
3. one Delta commit (delta-rs) that adds those files and removes the partition's
   previous ones: before it, readers see the previous extraction, after it the new one.

Why pyarrow writes the files and delta-rs only commits them: the 1,638,400-stream
generation is written faster with pyarrow than through ``write_deltalake`` (which
also computes column statistics nobody filters on: readers select a partition), and
the commit is then a step of its own, the point where an extraction becomes visible.

What runs at once, without loosening that order: the documents are encoded, hashed and
written by a worker while the rows are flattened (numpy, hashlib and file writes
release the GIL), and no Parquet file is written before they are; the files are then
encoded by two or more workers (pyarrow releases the GIL), and the commit waits for
every one of them.
"""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime
from typing import NamedTuple

import pyarrow as pa
import pyarrow.parquet as pq

from cdcgen.adapters.delta_tables import (
    commit_marker,
    commit_version,
    delta_table,
    is_delta,
    table_version,
)
from cdcgen.adapters.lake_store import LakeLocation, LakeRoot
from cdcgen.core.ring import Ring, ring_to_json
from cdcgen.core.topology import Node
from cdcgen.generation_lake.description_columns import DescriptionColumns
from cdcgen.generation_lake.description_json import description_bytes
from cdcgen.generation_lake.documents import write_document
from cdcgen.generation_lake.errors import ArtifactError
from cdcgen.generation_lake.lake_tables import (
    MANIFEST_KEY,
    TABLE_COLUMN,
    TIMESTAMP_COLUMN,
    GenerationArtifact,
    check_layout,
    partition_values,
    read_partition,
)
from cdcgen.generation_lake.streams_table import (
    STREAMS_SCHEMA,
    flatten_generation,
    timestamp_millis,
)

ROWS_PER_FILE = 262_144
"""Rows per Parquet file: enough files for both local cores to read in parallel."""
WRITERS = max(2, min(4, os.cpu_count() or 1))
"""Threads of one extraction: the documents beside the flattening, then Parquet files."""
UNIQUE_COLUMNS = (
    "stream_id",
    "stream_id_hex",
    "stream_token",
    "random_bits",
    "expected_first_token",
)
"""(Nearly) one value per stream: pyarrow would build a dictionary for each, see it
overflow and throw it away; without it their files are smaller and encode faster
(the other columns repeat a few values and keep theirs)."""
NO_STATISTICS = ("generation_id", "stream_id", "stream_id_hex")
"""Text and blob columns get no min/max: a file is one row group of random IDs, whose
bounds would skip nothing, and readers select partitions, not values."""
_TABLE_NAME = re.compile(r"[A-Za-z0-9_]+\.[A-Za-z0-9_]+")


def check_table_name(table: str) -> str:
    """``keyspace.table`` with CQL identifier characters only (it goes into a predicate)."""
    if not _TABLE_NAME.fullmatch(table):
        raise ArtifactError(f"{table!r} is not a keyspace.table name")
    return table


def table_schema(table: str | None) -> pa.Schema:
    """The Delta table's schema: the stream rows and the partition columns."""
    schema = STREAMS_SCHEMA.append(pa.field(TIMESTAMP_COLUMN, pa.int64(), nullable=False))
    if table:
        schema = schema.append(pa.field(TABLE_COLUMN, pa.string(), nullable=False))
    return schema


def write_generation(
    lake: LakeRoot,
    columns: DescriptionColumns,
    timestamp: datetime,
    generation_id: str,
    *,
    nodes: Sequence[Node] | Ring | None = None,
    table: str | None = None,
    source_problem: str | None = None,
    rows_per_file: int = ROWS_PER_FILE,
) -> GenerationArtifact:
    """Flatten ``columns`` and commit them as the generation's partition, replacing any
    previous extraction of it; returns the generation as the new version holds it.

    ``nodes`` is the ring it was made for, if known; ``table`` (``keyspace.table``) marks
    a tablets stream set of that table.
    """
    check_layout(lake)
    return write_extraction(
        lake,
        columns,
        timestamp,
        generation_id,
        nodes=nodes,
        table=table,
        source_problem=source_problem,
        rows_per_file=rows_per_file,
    )


def write_extraction(
    lake: LakeRoot,
    columns: DescriptionColumns,
    timestamp: datetime,
    generation_id: str,
    *,
    nodes: Sequence[Node] | Ring | None = None,
    table: str | None = None,
    source_problem: str | None = None,
    rows_per_file: int = ROWS_PER_FILE,
) -> GenerationArtifact:
    """:func:`write_generation` without the layout check (the migration writes while
    the Parquet layout it converts is still there)."""
    lake = LakeLocation.of(lake)
    table = check_table_name(table) if table else None
    millis = timestamp_millis(timestamp)
    ring = None if nodes is None else nodes if isinstance(nodes, Ring) else Ring.of_nodes(nodes)
    with ThreadPoolExecutor(WRITERS, thread_name_prefix="lake-write") as pool:
        documents = pool.submit(write_documents, lake, columns, ring)
        rows = flatten_generation(columns, timestamp, generation_id)
        description_sha256, ring_sha256 = documents.result()  # step 1 before any file
        artifact = GenerationArtifact(
            lake=lake,
            version=-1,  # known once committed
            timestamp_ms=millis,
            generation_id=generation_id,
            entry_count=columns.entry_count,
            stream_count=columns.stream_count,
            description_sha256=description_sha256,
            ring_sha256=ring_sha256,
            table=table,
            source_problem=source_problem,
        )
        if rows.num_rows == 0:
            raise ArtifactError(f"{artifact.label}: the description has no streams to extract")
        rows = rows.replace_schema_metadata(
            {MANIFEST_KEY: json.dumps(artifact.manifest()).encode("utf-8")}
        )
        marker = commit_marker()
        written = write_files(pool, artifact.directory, rows, marker, rows_per_file)
    del rows
    version = commit_files(artifact, written, marker)
    return read_partition(lake, millis, table, version)


def write_files(
    pool: ThreadPoolExecutor, folder: LakeLocation, rows: pa.Table, marker: str, per_file: int
) -> list[WrittenFile]:
    """Step 2: ``rows`` as Parquet files of ``per_file`` rows in ``folder``, encoded by
    ``pool``'s threads; returns them in row order once every one is written."""
    filesystem, directory = folder.arrow()
    if folder.is_local:  # S3 has no folders (a marker object would be junk)
        filesystem.create_dir(directory, recursive=True)

    def write_file(number: int) -> WrittenFile:
        name = f"part-{number:05d}-{marker}.parquet"
        part = rows.slice(number * per_file, per_file)
        with filesystem.open_output_stream(f"{directory}/{name}") as out:
            write_parquet(part, out)
            return WrittenFile(name, out.tell(), part.num_rows, time.time_ns())

    return list(pool.map(write_file, range(-(-rows.num_rows // per_file))))


def write_documents(
    lake: LakeLocation, columns: DescriptionColumns, ring: Ring | None
) -> tuple[str, str | None]:
    """Step 1: the description and ring documents; returns their digests."""
    description = write_document(lake, description_bytes(columns))
    if ring is None:
        return description, None
    return description, write_document(lake, json.dumps(ring_to_json(ring)).encode("utf-8"))


def write_parquet(rows: pa.Table, out: pa.NativeFile) -> None:
    """One file of stream rows (snappy; see :data:`UNIQUE_COLUMNS`, :data:`NO_STATISTICS`)."""
    names = rows.column_names
    pq.write_table(
        rows,
        out,
        compression="snappy",
        use_dictionary=[name for name in names if name not in UNIQUE_COLUMNS],
        write_statistics=[name for name in names if name not in NO_STATISTICS],
    )


class WrittenFile(NamedTuple):
    """A Parquet file as its writer knows it (no need to read it back to commit it)."""

    name: str
    size: int
    rows: int
    written_ns: int


def commit_files(artifact: GenerationArtifact, files: Sequence[WrittenFile], marker: str) -> int:
    """The commit point: one Delta commit replacing the partition's files with
    ``files`` (in :attr:`GenerationArtifact.directory`); returns its version."""
    from deltalake import CommitProperties
    from deltalake.transaction import AddAction, RemoveAction

    root = artifact.root
    schema = table_schema(artifact.table)
    partition_by = [TABLE_COLUMN, TIMESTAMP_COLUMN] if artifact.table else [TIMESTAMP_COLUMN]
    _create_table(root, schema, partition_by)
    values = partition_values(artifact.timestamp_ms, artifact.table)
    prefix = artifact.directory.uri[len(root.uri) :].strip("/")
    adds: list[AddAction | RemoveAction] = [
        AddAction(
            path=f"{prefix}/{file.name}",
            size=file.size,
            partition_values=values,
            modification_time=file.written_ns // 1_000_000,
            data_change=True,
            stats=json.dumps({"numRecords": file.rows}),
        )
        for file in files
    ]
    before = table_version(root)
    delta_table(root).create_write_transaction(
        adds,
        mode="overwrite",
        schema=schema,
        partition_by=partition_by,
        partition_filters=[(key, "=", value) for key, value in values.items()],
        commit_properties=CommitProperties(custom_metadata={"userMetadata": marker}),
    )
    return commit_version(root, marker, before)


def _create_table(root: LakeLocation, schema: pa.Schema, partition_by: list[str]) -> None:
    """Create the (empty) table unless it exists. Extract tasks of a fresh lake run at
    once: delta-rs then fails all but one creator now and then ("protocol changed"),
    and the table another created is as good."""
    from deltalake import DeltaTable
    from deltalake.exceptions import DeltaError

    if is_delta(root):
        return
    try:
        DeltaTable.create(
            root.uri,
            schema,
            mode="ignore",
            partition_by=partition_by,
            storage_options=root.storage_options(),
        )
    except DeltaError:
        if not is_delta(root):
            raise
