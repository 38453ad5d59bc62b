"""The cheaper paths of writing a generation and reading its rows back: same results.

The extraction overlaps its documents with the flattening and writes its Parquet files
from several threads, with its own encoding options; the rows for publication come from
one numpy conversion. These check that nothing a reader sees changed with that.
"""

from __future__ import annotations

import gc
import random
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

from cdcgen.adapters.lake_store import LakeLocation
from cdcgen.core.generation_arrays import build_generation_arrays
from cdcgen.core.topology import Node
from cdcgen.generation_lake import generation_writes
from cdcgen.generation_lake.description_columns import DescriptionColumns, hex_matrix
from cdcgen.generation_lake.description_json import description_bytes
from cdcgen.generation_lake.documents import DOCUMENTS_DIR
from cdcgen.generation_lake.generation_writes import NO_STATISTICS, UNIQUE_COLUMNS, write_generation
from cdcgen.generation_lake.lake_tables import MANIFEST_KEY, LocalGenerationLake
from cdcgen.generation_lake.streams_table import flatten_generation

WHEN = datetime(2026, 11, 23, 10, 0, tzinfo=UTC)
NODES = [Node("a", 4, 12, (-(10**18), 10**17)), Node("b", 2, 0, (5 * 10**17,))]


def _columns(seed: int = 3) -> DescriptionColumns:
    return DescriptionColumns.from_arrays(build_generation_arrays(NODES, random.Random(seed)))


def _slow_rows(columns: DescriptionColumns) -> list[tuple[int, list[bytes]]]:
    """The reference: a slice of the blob data per stream."""
    data, starts, offsets = columns.blob_data, columns.blob_offsets, columns.offsets
    return [
        (end, [data[starts[r] : starts[r + 1]] for r in range(offsets[i], offsets[i + 1])])
        for i, end in enumerate(columns.range_ends.tolist())
    ]


def test_stream_rows_keep_every_byte_of_16_byte_ids() -> None:
    # Trailing zero bytes are where a fixed-width byte string type would lose data.
    blobs = [bytes(15) + b"\x01", bytes(16), b"\xff" * 8 + bytes(8), b"\x00\x07" + bytes(14)]
    columns = DescriptionColumns.build(
        np.array([-5, 7, 9], dtype=np.int64),
        np.array([12, 12, 0], dtype=np.int64),
        np.array([2, 0, 2], dtype=np.int64),
        blobs,
    )
    rows = columns.stream_rows()
    assert rows == [(-5, blobs[:2]), (7, []), (9, blobs[2:])] == _slow_rows(columns)
    assert all(type(blob) is bytes for _, streams in rows for blob in streams)


def test_stream_rows_of_ids_of_other_lengths() -> None:
    blobs = [b"\x01" * 15, bytes(16), b"", b"\x02" * 17]
    columns = DescriptionColumns.build(
        np.array([1, 2], dtype=np.int64),
        np.array([0, 0], dtype=np.int64),
        np.array([1, 3], dtype=np.int64),
        blobs,
    )
    assert columns.stream_rows() == [(1, blobs[:1]), (2, blobs[1:])] == _slow_rows(columns)


def test_stream_rows_leave_the_collector_as_they_found_it() -> None:
    columns = _columns()
    assert gc.isenabled()
    assert columns.stream_rows() == _slow_rows(columns)
    assert gc.isenabled()
    gc.disable()
    try:
        columns.stream_rows()
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_hex_matrix_is_each_rows_hex() -> None:
    ids = np.frombuffer(random.Random(5).randbytes(16 * 40), dtype=np.uint8).reshape(40, 16)
    texts = [row.tobytes().hex().encode("ascii") for row in ids]
    assert [row.tobytes() for row in hex_matrix(ids)] == texts
    assert hex_matrix(ids[::2]).shape == (20, 32)  # a strided view is hexed row by row
    assert [row.tobytes() for row in hex_matrix(ids[::2])] == texts[::2]
    assert hex_matrix(ids[:0]).shape == (0, 32)


def test_the_lake_gives_back_the_rows_of_the_description_it_was_given(tmp_path: Path) -> None:
    columns = _columns()
    artifact = write_generation(tmp_path / "lake", columns, WHEN, "g", nodes=NODES)
    rows = LocalGenerationLake(tmp_path / "lake").stream_rows(
        artifact.generation, artifact.version, artifact.description_sha256
    )
    assert rows == _slow_rows(columns)


def test_files_hold_the_rows_and_manifest_with_the_chosen_encodings(tmp_path: Path) -> None:
    columns = _columns()
    artifact = write_generation(tmp_path / "lake", columns, WHEN, "g", rows_per_file=3)
    names = [f.path.name for f in artifact.files]
    assert names == sorted(names) and len(names) == -(-columns.stream_count // 3)
    tables = [pq.read_table(f.path) for f in artifact.files]
    expected = flatten_generation(columns, WHEN, "g")
    assert [t.num_rows for t in tables[:-1]] == [3] * (len(tables) - 1)
    assert all(
        t.equals(expected.slice(3 * i, 3).replace_schema_metadata(t.schema.metadata))
        for i, t in enumerate(tables)
    )
    for file in artifact.files:
        metadata = pq.read_metadata(file.path)
        assert MANIFEST_KEY in (metadata.metadata or {})
        group = metadata.row_group(0)
        for i in range(group.num_columns):
            column = group.column(i)
            dictionary = column.dictionary_page_offset is not None
            assert dictionary == (column.path_in_schema not in UNIQUE_COLUMNS)
            assert column.is_stats_set == (column.path_in_schema not in NO_STATISTICS)


def test_no_file_is_written_when_the_documents_fail(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def refuse(lake: LakeLocation, data: bytes) -> str:
        raise OSError("disk full")

    monkeypatch.setattr(generation_writes, "write_document", refuse)
    with pytest.raises(OSError, match="disk full"):
        write_generation(tmp_path / "lake", _columns(), WHEN, "g", nodes=NODES)
    assert not list((tmp_path / "lake").rglob("*.parquet"))


def test_the_description_document_keeps_its_bytes(tmp_path: Path) -> None:
    columns = _columns()
    artifact = write_generation(tmp_path / "lake", columns, WHEN, "g")
    stored = tmp_path / "lake" / DOCUMENTS_DIR / f"{artifact.description_sha256}.json"
    assert stored.read_bytes() == description_bytes(columns)
