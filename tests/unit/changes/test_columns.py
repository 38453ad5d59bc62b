"""Driver rows to lake batches: types, decoded operations, base tokens, dedupe, layout."""

from __future__ import annotations

import json
import random
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pyarrow as pa
import pytest
from cassandra import cqltypes
from cassandra.metadata import Murmur3Token

from cdcgen.adapters.delta_tables import commit_version
from cdcgen.adapters.errors import DeltaLogError
from cdcgen.changes.base_tokens import BaseKeyHasher
from cdcgen.changes.codec import arrow_type_and_converter
from cdcgen.changes.columns import LakeBatchBuilder, Placement, column_specs, lake_schema
from cdcgen.changes.derived_columns import day_label
from cdcgen.changes.errors import LayoutError
from cdcgen.changes.layout import (
    LAYOUT_FILE,
    is_parquet_lake,
    lake_buckets,
    list_windows,
    window_predicate,
)
from cdcgen.core.cdc_log import (
    LogPartitioner,
    Operation,
    micros_of_timeuuid,
    operation_name,
    timeuuid_from_micros,
)
from cdcgen.core.change_batch import PARTITION_COLUMNS
from cdcgen.core.lake_buckets import BucketRule
from cdcgen.core.stream_id import StreamId
from cdcgen.core.windows import LakeWindow, window_label

T0 = datetime(2026, 11, 22, 23, 59, 59, 999_000, tzinfo=UTC)
T0_US = 1_795_391_999_999_000


def test_operation_names_cover_scylla_codes() -> None:
    assert [operation_name(op.value) for op in Operation] == [
        "pre_image", "update", "insert", "row_delete", "partition_delete",
        "range_delete_start_inclusive", "range_delete_start_exclusive",
        "range_delete_end_inclusive", "range_delete_end_exclusive", "post_image",
        "service_row_delete", "service_partition_delete",
    ]  # fmt: skip
    assert operation_name(-3) == "service_row_delete"  # ScyllaDB's own delete: an expiry
    assert operation_name(42) == "unknown(42)"
    assert operation_name(None) is None


def test_cql_types_map_to_arrow() -> None:
    set_of_text = cqltypes.SetType.apply_parameters([cqltypes.UTF8Type])
    map_type = cqltypes.MapType.apply_parameters([cqltypes.TimeUUIDType, cqltypes.Int32Type])
    frozen = cqltypes.FrozenType.apply_parameters([set_of_text])
    assert arrow_type_and_converter(cqltypes.Int32Type)[0] == pa.int32()
    assert arrow_type_and_converter(cqltypes.ByteType)[0] == pa.int8()
    assert arrow_type_and_converter(cqltypes.BytesType)[0] == pa.binary()
    assert arrow_type_and_converter(cqltypes.DateType)[0] == pa.timestamp("us", tz="UTC")
    assert arrow_type_and_converter(frozen)[0] == pa.list_(pa.string())
    arrow, convert = arrow_type_and_converter(map_type)
    assert arrow == pa.map_(pa.string(), pa.int32())
    key = uuid.uuid1()
    assert convert is not None and convert({key: 7}) == [(str(key), 7)]
    arrow, convert = arrow_type_and_converter(cqltypes.UUIDType)
    assert arrow == pa.string() and convert is not None and convert(key) == str(key)


def test_timeuuid_write_time_and_day_label() -> None:
    stamp = timeuuid_from_micros(T0_US, random.Random(1))
    assert micros_of_timeuuid(stamp) == T0_US
    assert day_label(T0_US) == "2026-11-22"
    assert day_label(T0_US + 1000) == "2026-11-23"


def test_base_key_hash_matches_cassandra_tokens() -> None:
    single = BaseKeyHasher([cqltypes.Int32Type], 4)
    assert single.tokens([[1, None]]).to_pylist() == [-4069959284402364209, None]  # jars.md
    compound = BaseKeyHasher([cqltypes.Int32Type, cqltypes.UTF8Type], 4)
    composite = b"\x00\x04\x00\x00\x00\x01\x00" + b"\x00\x01a\x00"
    assert compound.tokens([[1, 2], ["a", None]]).to_pylist() == [
        Murmur3Token.from_key(composite).value,
        None,
    ]


LOG_METADATA = [
    ("ks", "t_scylla_cdc_log", "cdc$stream_id", cqltypes.BytesType),
    ("ks", "t_scylla_cdc_log", "cdc$time", cqltypes.TimeUUIDType),
    ("ks", "t_scylla_cdc_log", "cdc$batch_seq_no", cqltypes.Int32Type),
    ("ks", "t_scylla_cdc_log", "cdc$end_of_batch", cqltypes.BooleanType),
    ("ks", "t_scylla_cdc_log", "cdc$operation", cqltypes.ByteType),
    ("ks", "t_scylla_cdc_log", "cdc$ttl", cqltypes.LongType),
    ("ks", "t_scylla_cdc_log", "pk", cqltypes.Int32Type),
    ("ks", "t_scylla_cdc_log", "v", cqltypes.UTF8Type),
]


def test_builder_dedupes_decodes_and_places_rows() -> None:
    specs = column_specs(LOG_METADATA)
    schema = lake_schema(specs)
    builder = LakeBatchBuilder(specs, ["pk"], 4, schema)
    stamp = timeuuid_from_micros(T0_US, random.Random(2))
    sid = bytes(range(16))
    rows = [
        (sid, stamp, 0, None, 2, None, 1, "a"),
        (sid, stamp, 1, True, 9, None, 1, "b"),
        (sid, stamp, 0, None, 2, None, 1, "a"),  # delivered twice upstream
    ]
    seen: set = set()
    fresh = builder.unique_rows(rows, seen)
    assert len(fresh) == 2
    assert builder.unique_rows(rows[2:], seen) == []
    batch = builder.to_batch([(fresh, Placement("G", "W", 3))])
    data = batch.to_pydict()
    assert data["operation_name"] == ["insert", "post_image"]
    assert data["base_token"] == [-4069959284402364209] * 2
    assert data["cdc$time"] == [str(stamp)] * 2
    assert data["date"] == ["2026-11-22"] * 2
    assert data["write_time"][0] == T0
    assert (data["generation"], data["window"], data["bucket"]) == (["G"] * 2, ["W"] * 2, [3] * 2)
    empty = builder.to_batch([])
    assert empty.num_rows == 0 and empty.schema == schema


# --- lake layout ------------------------------------------------------------------------------


def test_layout_records_bucket_count_and_rule_once(tmp_path: Path) -> None:
    root = tmp_path / "shop.orders"
    first = lake_buckets(root, 8, LogPartitioner.CDC)
    assert (first.count, first.rule) == (8, BucketRule.RING)
    again = lake_buckets(root, 16, LogPartitioner.CDC)  # recorded wins: no reshuffle
    assert (again.count, again.rule) == (8, BucketRule.RING)
    (root / LAYOUT_FILE).write_text("{nope")
    with pytest.raises(LayoutError, match="unreadable"):
        lake_buckets(root, 8, LogPartitioner.CDC)
    (root / LAYOUT_FILE).write_text(json.dumps({"version": 2, "buckets": 8, "bucket_rule": "md5"}))
    with pytest.raises(LayoutError, match="unreadable"):
        lake_buckets(root, 8, LogPartitioner.CDC)
    (root / LAYOUT_FILE).write_text(json.dumps({"version": 3, "buckets": 8}))
    with pytest.raises(LayoutError, match="newer"):
        lake_buckets(root, 8, LogPartitioner.CDC)


def test_a_first_layout_lake_keeps_its_crc32_buckets(tmp_path: Path) -> None:
    root = tmp_path / "shop.orders"
    root.mkdir()
    (root / LAYOUT_FILE).write_text(json.dumps({"version": 1, "buckets": 4}))
    buckets = lake_buckets(root, 8, LogPartitioner.CDC)
    assert (buckets.count, buckets.rule) == (4, BucketRule.CRC32)
    assert buckets.ring_slices is None


def test_ring_buckets_slice_the_log_partitioners_tokens(tmp_path: Path) -> None:
    """The sandbox's Murmur3 log is scanned in Murmur3 order: its buckets slice that."""
    from cassandra.murmur3 import murmur3

    stream = StreamId(bytes.fromhex("7fffffffffffffff0123456789abcd01"))
    scylla = lake_buckets(tmp_path / "a", 8, LogPartitioner.CDC)
    sandbox = lake_buckets(tmp_path / "b", 8, LogPartitioner.MURMUR3)
    assert scylla.of(stream) == 7  # the stream's own token is near the ring's end
    assert sandbox.of(stream) == sandbox.of_token(murmur3(stream.raw))


def _delta_lake(root: Path, partitions: list[tuple[str, str, str, int]]) -> None:
    """A changes table with one row per ``(date, generation, window, bucket)``, written
    by delta-rs as Spark would lay it out."""
    from deltalake import write_deltalake

    columns = list(zip(*partitions, strict=True))
    rows = pa.table(
        {
            "stream_id": pa.array([b"s"] * len(partitions), pa.binary()),
            "date": pa.array(columns[0], pa.string()),
            "generation": pa.array(columns[1], pa.string()),
            "window": pa.array(columns[2], pa.string()),
            "bucket": pa.array(columns[3], pa.int32()),
        }
    )
    write_deltalake(str(root), rows, partition_by=list(PARTITION_COLUMNS), mode="append")


def test_windows_are_listed_from_the_tables_log_across_dates(tmp_path: Path) -> None:
    root = tmp_path / "shop.orders"
    start, end = T0.replace(hour=23, minute=0, second=0, microsecond=0), T0.replace(microsecond=0)
    label = window_label(start, end)
    assert list_windows(root) == []  # no table yet
    _delta_lake(root, [("2026-11-22", "G1", label, 2), ("2026-11-23", "G1", label, 2)])
    stray = root / "date=2026-11-22" / "generation=G1" / f"window={label}" / "bucket=3"
    stray.mkdir(parents=True)  # a killed job's files, in no commit: not a window
    (stray / "part-0.parquet").write_bytes(b"x")
    assert list_windows(root) == [LakeWindow("G1", start, end, 2)]


def test_a_write_is_found_by_its_marker_and_a_write_of_nothing_keeps_the_version(
    tmp_path: Path,
) -> None:
    import pyarrow as pa
    from deltalake import CommitProperties, write_deltalake

    root = tmp_path / "t"
    with pytest.raises(DeltaLogError, match="no Delta table"):
        commit_version(root, "m0", None)
    write_deltalake(str(root), pa.table({"a": [1]}))
    for marker in ("m1", "m2"):
        write_deltalake(
            str(root),
            pa.table({"a": [2]}),
            mode="append",
            commit_properties=CommitProperties(custom_metadata={"userMetadata": marker}),
        )
    assert commit_version(root, "m1", 0) == 1  # found though another commit followed
    assert commit_version(root, "m2", 0) == 2
    assert commit_version(root, "m3", 2) == 2  # Delta commits nothing for a no-op write


def test_a_parquet_lake_of_an_earlier_version_must_be_converted(tmp_path: Path) -> None:
    root = tmp_path / "shop.orders"
    label = window_label(T0.replace(microsecond=0), T0.replace(microsecond=0))
    directory = root / "date=2026-11-22" / "generation=G1" / f"window={label}" / "bucket=2"
    directory.mkdir(parents=True)
    (directory / "part-0.parquet").write_bytes(b"x")
    assert is_parquet_lake(root)
    with pytest.raises(LayoutError, match="cdcgen lake migrate"):
        list_windows(root)


def test_window_predicate_selects_exactly_the_windows_buckets() -> None:
    start = T0.replace(microsecond=0)
    end = start + timedelta(minutes=5)
    other = end + timedelta(minutes=5)
    predicate = window_predicate(
        [
            LakeWindow("G1", start, end, 3),
            LakeWindow("G1", start, end, 1),
            LakeWindow("G1", end, other, 1),
        ]
    )
    assert predicate == (
        f"(generation = 'G1' AND window = '{window_label(start, end)}' AND bucket IN (1, 3))"
        f" OR (generation = 'G1' AND window = '{window_label(end, other)}' AND bucket IN (1))"
    )
    with pytest.raises(LayoutError, match="not a generation or window label"):
        window_predicate([LakeWindow("G1' OR '1'='1", start, end, 0)])
    with pytest.raises(LayoutError, match="no windows"):
        window_predicate([])
