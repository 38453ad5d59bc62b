"""The generation rules, their one flag pass and the engine choice (SQLite; no GX, no Spark).

The pass is run in SQLite on hand-made rows, one broken rule per row, to show that each
flag fires on exactly its row; that both engines read the same text is the integration
test's part (tests/integration/test_generation_validation.py).
"""

from __future__ import annotations

import re
import sqlite3

import pyarrow as pa
import pytest

from cdcgen.config import PipelineConfig
from cdcgen.errors import ConfigError
from cdcgen.validation import generation_flags
from cdcgen.validation.generation_flags import choose_engine, stream_id_counts
from cdcgen.validation.generation_rules import (
    ENTRY_DERIVED,
    RULES,
    SOURCE_COLUMNS,
    STREAM_DERIVED,
    STREAM_ID_COUNTS,
    rules_of,
)
from cdcgen.validation.suites import load_suites

SQL_WORDS = {"and", "or", "not", "case", "when", "then", "else", "end", "length"}


def test_every_custom_suite_expectation_is_a_rule_and_every_rule_is_in_a_suite() -> None:
    everything = {"topology", "shard_counts", "previous"}
    types = {
        e.type
        for layout in ("vnodes", "tablets")
        for suite in load_suites(available=everything, layout=layout)
        for e in suite.expectations
    }
    custom = {t for t in types if not t.startswith("expect_table_")}
    assert custom == {rule.expectation for rule in RULES}


def test_rules_read_only_columns_an_engine_loads_or_derives() -> None:
    for rule in RULES:
        derived = (
            {**STREAM_DERIVED, **STREAM_ID_COUNTS} if rule.batch == "streams" else ENTRY_DERIVED
        )
        words = set(re.findall(r"\b[a-z_]+\b", rule.condition + " " + " ".join(rule.shown)))
        unknown = words - SQL_WORDS - set(SOURCE_COLUMNS[rule.batch]) - set(derived)
        assert not unknown, (rule.expectation, unknown)


@pytest.mark.parametrize(
    ("setting", "streams", "expected"),
    [
        ("auto", 10, "sql"),
        ("auto", 100, "sql"),
        ("auto", 101, "spark"),
        ("sql", 10**7, "sql"),
        ("spark", 1, "spark"),
    ],
)
def test_the_engine_is_the_setting_or_chosen_by_size(
    setting: str, streams: int, expected: str
) -> None:
    assert choose_engine(setting, streams, sql_max_streams=100) == expected


def test_an_unknown_engine_is_refused_by_the_setting_and_the_chooser() -> None:
    with pytest.raises(ConfigError, match="CDCGEN_VALIDATION_ENGINE"):
        PipelineConfig.from_env({"CDCGEN_VALIDATION_ENGINE": "duckdb"})
    with pytest.raises(ValueError, match="unknown validation engine"):
        choose_engine("duckdb", 1, 100)
    config = PipelineConfig.from_env({"CDCGEN_VALIDATION_ENGINE": "spark"})
    assert config.validation_engine == "spark"


def test_id_counts_keep_only_repeated_or_reused_ids() -> None:
    a, b, c, d = (bytes([n]) * 16 for n in range(4))
    counts = stream_id_counts(pa.chunked_array([[a, b, a], [c, b"short"]]), pa.array([c, d]))
    rows = sorted(zip(*(counts[name].to_pylist() for name in counts.column_names), strict=True))
    assert rows == [(a, 2, False), (c, 1, True)]
    alone = stream_id_counts(pa.array([a, a, b]), None)
    assert alone.to_pylist() == [{"stream_id": a, "occurrences": 2, "reused": False}]


def test_id_counts_decide_distinctness_by_whole_ids_not_by_low_halves() -> None:
    """The sorted-low-halves shortcut only ever says "all distinct"; IDs sharing a low
    half, IDs of other lengths and sliced arrays go to the exact count."""
    low = bytes(range(8))
    x, y = b"\x01" * 8 + low, b"\x02" * 8 + low  # distinct IDs, same low half
    assert stream_id_counts(pa.array([x, y]), None).num_rows == 0
    assert stream_id_counts(pa.array([x]), pa.array([y])).num_rows == 0
    assert stream_id_counts(pa.array([x, x]), None)["occurrences"].to_pylist() == [2]
    sliced = pa.array([x, x, y, b"\x03" * 16]).slice(1)  # an offset into the buffer
    assert stream_id_counts(sliced, None).num_rows == 0
    assert stream_id_counts(sliced, pa.array([b"\x03" * 16]))["reused"].to_pylist() == [True]
    distinct = [bytes([i // 256, i % 256]) * 8 for i in range(5000)]
    assert stream_id_counts(pa.array(distinct), pa.array([b"\xff" * 16])).num_rows == 0
    again = stream_id_counts(pa.array(distinct), pa.array(distinct[4321:4322]))
    assert again.to_pylist() == [{"stream_id": distinct[4321], "occurrences": 1, "reused": True}]


def test_without_counted_ids_the_pass_needs_no_counts_table() -> None:
    """No ID repeats or is reused: the query gives every ID the defaults without a
    join, so the counts table need not exist; a stream still breaks the other rules."""
    rules = rules_of([r.expectation for r in RULES if "tablet" not in r.expectation], "streams")
    assert generation_flags.COUNTS_SOURCE not in generation_flags.streams_query(
        rules, counted=False
    )
    rows = [dict(STREAM, stream_id=bytes([0x20 + i]) * 16, shard=i) for i in range(3)]
    rows.append({**STREAM, "stream_id": b"\x30" * 16, "shard": 7, "version": 2})
    streams = pa.Table.from_pylist([{k: row[k] for k in SOURCE_COLUMNS["streams"]} for row in rows])
    previous = pa.table({"stream_id": [b"\x0a" * 16]})
    assert stream_id_counts(streams["stream_id"], previous["stream_id"]).num_rows == 0
    counts = generation_flags.counts_of(streams, previous, rules)
    assert counts is None  # nothing counted: what both engines are handed
    with sqlite3.connect(":memory:") as connection:
        generation_flags.flag_streams(connection, streams, counts, rules)
        cursor = connection.execute(f"SELECT * FROM {generation_flags.STREAMS_TABLE}")
        names = [column[0] for column in cursor.description]
        (row,) = [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]
        tables = {t for (t,) in connection.execute("SELECT name FROM sqlite_master")}
    assert generation_flags.COUNTS_SOURCE not in tables
    assert row["shard"] == 7 and row["occurrences"] == 1
    assert {r.flag for r in rules if row[r.flag]} == {"breaks_stream_id_version_one"}


STREAM = {
    "entry_index": 1,
    "range_start": 100,
    "range_end": 200,
    "ignore_msb": 12,
    "shard": 0,
    "stream_id": b"\x00" * 16,
    "stream_id_hex": "00" * 16,
    "stream_token": 150,
    "version": 1,
    "index_bits": 1,
    "expected_first_token": 150,
}
#: One row per broken rule: (the change from a valid stream, the rule it breaks).
BROKEN_STREAMS = [
    (
        {"stream_id": b"\x01" * 15, "version": None, "index_bits": None},
        "stream_ids_to_be_sixteen_bytes",
    ),
    ({"version": 2}, "stream_id_version_one"),
    ({"index_bits": 7}, "index_bits_to_equal_entry_index"),
    ({"ignore_msb": 64}, "sharding_to_be_possible"),
    ({"stream_token": 250, "expected_first_token": 250}, "stream_token_inside_entry_range"),
    ({"expected_first_token": None}, "stream_token_on_its_shard"),
    ({"stream_id": b"\x09" * 16}, "stream_ids_unique_in_generation"),  # twice, below
    ({"stream_id": b"\x0a" * 16}, "no_stream_reused_from_previous_generation"),
]


def test_the_flag_pass_in_sqlite_flags_each_broken_stream_with_its_rule_only() -> None:
    types = [r.expectation for r in RULES if "tablet" not in r.expectation]
    rules = rules_of(types, "streams")
    rows = [dict(STREAM, stream_id=bytes([0x20 + i]) * 16, shard=i) for i in range(3)]
    for i, (change, _) in enumerate(BROKEN_STREAMS):
        rows.append({**STREAM, "stream_id": bytes([0x40 + i]) * 16, "shard": 10 + i, **change})
    rows.append({**rows[-2], "shard": 99})  # the duplicate's twin
    streams = pa.Table.from_pylist([{k: row[k] for k in SOURCE_COLUMNS["streams"]} for row in rows])
    counts = stream_id_counts(streams["stream_id"], pa.array([b"\x0a" * 16]))
    with sqlite3.connect(":memory:") as connection:
        generation_flags.flag_streams(connection, streams, counts, rules)
        cursor = connection.execute(f"SELECT * FROM {generation_flags.STREAMS_TABLE}")
        names = [column[0] for column in cursor.description]
        flagged = [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]
    by_shard = {row["shard"]: {r.flag for r in rules if row[r.flag]} for row in flagged}
    expected = {10 + i: {f"breaks_{suffix}"} for i, (_, suffix) in enumerate(BROKEN_STREAMS)}
    expected[99] = {"breaks_stream_ids_unique_in_generation"}
    assert by_shard == expected  # valid streams (shards 0-2) are not kept at all
    assert {row["occurrences"] for row in flagged if row["shard"] in (16, 99)} == {2}
    assert generation_flags.output_columns(rules, "streams") == names


def test_the_flag_pass_keeps_every_entry_with_window_facts() -> None:
    entries = pa.Table.from_pylist(
        [
            {"entry_index": 0, "range_end": 10, "stream_count": 2, "owner": "a"},
            {"entry_index": 1, "range_end": 30, "stream_count": 2, "owner": "a"},
            {"entry_index": 2, "range_end": 20, "stream_count": 0, "owner": "b"},
            {"entry_index": 3, "range_end": 30, "stream_count": 3, "owner": "a"},
        ]
    )
    entries = entries.append_column("range_start", pa.array([30, 10, 30, 20]))
    entries = entries.append_column("source_problem", pa.array([None] * 4, pa.string()))
    rules = [r for r in rules_of([r.expectation for r in RULES], "entries")]
    rules = [r for r in rules if "tablet" not in r.expectation and "ring" not in r.flag]
    rules = [r for r in rules if "owner_shards" not in r.flag]
    with sqlite3.connect(":memory:") as connection:
        generation_flags.flag_entries(connection, entries, rules)
        rows = connection.execute(
            "SELECT entry_index, breaks_range_ends_strictly_increasing, breaks_range_ends_unique, "
            "breaks_every_entry_to_have_streams, breaks_owner_ranges_to_agree_on_stream_count "
            f"FROM {generation_flags.ENTRIES_TABLE} ORDER BY entry_index"
        ).fetchall()
    assert rows == [(0, 0, 0, 0, 1), (1, 0, 1, 0, 1), (2, 1, 0, 1, 0), (3, 0, 1, 0, 1)]
