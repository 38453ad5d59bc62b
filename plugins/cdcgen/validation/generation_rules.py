"""The generation rules, each written once: a SQL condition that flags an offending row.

Every custom generation expectation (the ``expect_*`` types of
``expectations/generation_*.json``) is one :class:`RowRule`: a boolean SQL expression over
one row of its batch (``streams``: one row per stream; ``entries``: one row per entry,
see :mod:`cdcgen.generation_lake.streams_table`) and the columns a person needs to find the row.
Rules that compare a row with others use *derived* columns: window functions
(:data:`ENTRY_DERIVED`, :data:`STREAM_DERIVED`) and the per-ID counts joined to the
streams (:data:`STREAM_ID_COUNTS`).

The SQL is the subset Spark SQL and SQLite read alike (``CASE``, ``LAG``, ``COUNT(*)
OVER (PARTITION BY ...)``, ``length`` of a binary), so one text runs on either engine:
:mod:`.generation_flags` assembles it into the one pass that flags every row, and the GX
expectation of each rule (:mod:`.generation_expectations`) selects the rows carrying its
flag. What a rule means is decided here and nowhere else.

Pure data: no Spark, no GX, no SQL engine.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

Batch = Literal["streams", "entries"]

#: Columns shown for an offending stream: enough to find and understand it.
STREAM_COLUMNS = ("stream_id_hex", "entry_index", "shard", "stream_token")
#: The order offending rows are listed in, per batch (reports read top to bottom).
ROW_ORDER: Mapping[Batch, tuple[str, ...]] = {
    "streams": ("entry_index", "shard"),
    "entries": ("entry_index",),
}

SOURCE_COLUMNS: Mapping[Batch, tuple[str, ...]] = {
    "streams": (
        "entry_index", "range_start", "range_end", "ignore_msb", "shard", "stream_id",
        "stream_id_hex", "stream_token", "version", "index_bits", "expected_first_token",
    ),
    "entries": (
        "entry_index", "range_start", "range_end", "ignore_msb", "stream_count",
        "is_ring_token", "owner_shard_count", "owner", "source_problem",
    ),
}  # fmt: skip
"""The batch columns rules may read: what an engine loads (a subset of the lake's)."""

ENTRY_DERIVED: Mapping[str, str] = {
    "previous_range_end": "LAG(range_end) OVER (ORDER BY entry_index)",
    "entries_with_this_end": "COUNT(*) OVER (PARTITION BY range_end)",
    "fewest": "MIN(stream_count) OVER (PARTITION BY owner)",
    "most": "MAX(stream_count) OVER (PARTITION BY owner)",
}
"""Entry columns computed over the whole batch, usable by entry rules."""

STREAM_DERIVED: Mapping[str, str] = {"byte_length": "length(stream_id)"}
"""Stream columns computed within the row, usable by stream rules."""

STREAM_ID_COUNTS: Mapping[str, str] = {
    "occurrences": "how often the row's stream ID occurs in this generation",
    "reused": "whether the previous generation had the row's stream ID",
}
"""Stream columns computed per stream ID (:mod:`.generation_flags`), usable by rules."""


@dataclass(frozen=True)
class RowRule:
    """One rule: its GX expectation type, the batch it reads and when a row breaks it."""

    expectation: str
    batch: Batch
    condition: str
    shown: tuple[str, ...]
    description: str
    why: str

    @property
    def flag(self) -> str:
        """The column holding this rule's verdict per row (true: the row breaks it)."""
        return "breaks_" + self.expectation.removeprefix("expect_")


def _entries(expectation: str, condition: str, shown: str, description: str, why: str) -> RowRule:
    return RowRule(expectation, "entries", condition, tuple(shown.split()), description, why)


def _streams(expectation: str, condition: str, shown: str, description: str, why: str) -> RowRule:
    """A stream rule; its rows show :data:`STREAM_COLUMNS` then ``shown``, unless
    ``shown`` starts with ``stream_id_hex`` (then exactly ``shown``)."""
    names = tuple(shown.split())
    if names[:1] != ("stream_id_hex",):
        names = STREAM_COLUMNS + names
    return RowRule(expectation, "streams", condition, names, description, why)


RULES: tuple[RowRule, ...] = (
    # --- entries (coverage) ---
    _entries(
        "expect_range_ends_strictly_increasing",
        "previous_range_end IS NOT NULL AND range_end <= previous_range_end",
        "entry_index range_end previous_range_end",
        "Range ends strictly increase from entry to entry (no duplicates).",
        "Entries sorted by token_range_end, strictly: lookup's binary search needs it.",
    ),
    _entries(
        "expect_range_ends_unique",
        "entries_with_this_end > 1",
        "entry_index range_end entries_with_this_end",
        "No two entries share a range end.",
        "Two entries ending at one token would make one of them unreachable by lookup.",
    ),
    _entries(
        "expect_every_entry_to_have_streams",
        "stream_count < 1",
        "entry_index range_start range_end stream_count",
        "Every entry has at least one stream.",
        "An entry without streams leaves its vnode's writes nowhere to go.",
    ),
    _entries(
        "expect_range_ends_to_be_ring_tokens",
        "is_ring_token IS NULL OR NOT is_ring_token",
        "entry_index range_end",
        "Every range end is a token of the ring (optimal generation).",
        "With the entry count, is_cdc_generation_optimal: every range end is a ring token.",
    ),
    _entries(
        "expect_entry_stream_count_to_match_owner_shards",
        "owner_shard_count IS NOT NULL AND stream_count <> owner_shard_count",
        "entry_index range_end stream_count owner_shard_count",
        "Each entry has as many streams as its owning node has shards.",
        "One stream per shard of the node owning the range end, as ScyllaDB builds it.",
    ),
    _entries(
        "expect_owner_ranges_to_agree_on_stream_count",
        "owner IS NOT NULL AND fewest <> most",
        "entry_index range_end owner stream_count fewest most",
        "Every range a node owns holds the same number of streams.",
        "Every range of one node holds one stream per shard of that node: the same number. "
        "What can be checked when the ring does not store shard counts (gossip).",
    ),
    _entries(
        "expect_source_rows_to_form_a_description",
        "source_problem IS NOT NULL AND entry_index = 0",
        "entry_index range_end source_problem",
        "The source reader accepted the stored rows as a description.",
        "The source reader refused the stored rows (the reason is in source_problem); they "
        "were extracted anyway so the other checks can show where they are wrong.",
    ),
    _entries(
        "expect_one_stream_per_tablet",
        "stream_count <> 1",
        "entry_index range_start range_end stream_count",
        "Every tablet (entry) of a stream set has exactly one stream.",
        "Tablets: each tablet has exactly one stream (create_table_streams_mutation).",
    ),
    # --- streams (format) ---
    _streams(
        "expect_stream_ids_to_be_sixteen_bytes",
        "byte_length <> 16",
        "stream_id_hex entry_index shard byte_length",
        "Every stream ID is exactly 16 bytes.",
        "ScyllaDB maps a cdc$stream_id of any other length to the minimum token.",
    ),
    _streams(
        "expect_stream_id_version_one",
        "byte_length = 16 AND version <> 1",
        "version",
        "Every stream ID has version 1 in its low 4 bits.",
        'Version nibble 1: ScyllaDB rejects greater versions ("Unknown CDC stream id version").',
    ),
    _streams(
        "expect_index_bits_to_equal_entry_index",
        "byte_length = 16 AND index_bits <> entry_index",
        "index_bits",
        "Every stream ID's index bits equal its entry's index.",
        "Bits [4, 26) of the low qword name the vnode (entry) the stream belongs to.",
    ),
    _streams(
        "expect_tablet_stream_index_zero",
        "byte_length = 16 AND index_bits <> 0",
        "index_bits",
        "Every tablet stream ID has index bits 0.",
        "Tablets streams are stream_id(last_token, 0): no vnode index to encode.",
    ),
    _streams(
        "expect_stream_ids_unique_in_generation",
        "occurrences > 1",
        "occurrences",
        "No stream ID appears twice in the generation.",
        "Two entries (or shards) sharing a stream would mix their changes.",
    ),
    _streams(
        "expect_no_stream_reused_from_previous_generation",
        "reused",
        "",
        "No stream ID of the previous generation appears again.",
        "The random bits make reuse across generations unlikely; a reused ID is suspicious.",
    ),
    _streams(
        "expect_sharding_to_be_possible",
        "ignore_msb < 0 OR ignore_msb > 63",
        "ignore_msb",
        "Every entry's sharding_ignore_msb is between 0 and 63.",
        "ignore_msb outside [0, 63] cannot shard a 64-bit token (no colocation possible).",
    ),
    # --- streams (colocation) ---
    _streams(
        "expect_stream_token_inside_entry_range",
        "NOT (CASE WHEN range_start < range_end "
        "THEN stream_token > range_start AND stream_token <= range_end "
        # entry 0 (and a one-entry ring) wraps around: (start, MAX] and (MIN, end]
        "ELSE stream_token > range_start OR stream_token <= range_end END)",
        "range_start range_end",
        "Every stream's token lies in its entry's range (start, end], wrapping for entry 0.",
        "Vnode colocation: the log write lands on the same replicas as the base write.",
    ),
    _streams(
        "expect_stream_token_on_its_shard",
        "expected_first_token IS NULL OR stream_token <> expected_first_token",
        "expected_first_token range_end",
        "Stream j's token is the first token of shard j in its range, or the range end "
        "when the range holds no token of shard j.",
        "Shard colocation: stream j sits on shard j's first token, or on the range end.",
    ),
    _streams(
        "expect_stream_token_to_be_tablet_last_token",
        "stream_token <> range_end",
        "range_start range_end",
        "Every tablet stream's token is its tablet's last token.",
        "Tablets colocation: the stream's token is its tablet's last token, so the log write "
        "goes to the tablet's replicas (and shard) like the base write.",
    ),
)
"""Every generation rule, in suite order."""

RULES_BY_EXPECTATION: Mapping[str, RowRule] = {rule.expectation: rule for rule in RULES}


def rules_of(expectations: list[str] | tuple[str, ...], batch: Batch) -> list[RowRule]:
    """The rules among ``expectations`` (suite types; built-in ones have none) on ``batch``."""
    found = (RULES_BY_EXPECTATION.get(name) for name in expectations)
    return [rule for rule in found if rule is not None and rule.batch == batch]
