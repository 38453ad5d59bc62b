"""The generation rules as named Great Expectations expectations.

The row rules of a changes run are their siblings in :mod:`.change_expectations`.

Each class is an :class:`UnexpectedRowsExpectation` with a fixed Spark SQL query over
the batch (one row per stream, or one per entry; see :mod:`cdcgen.extract.streams_table`)
that returns the offending rows with the columns a person needs to find them (stream ID
hex, entry, token). Making each rule its own class gives it a domain name in the suite
JSON, in results and in Data Docs (``expect_stream_token_on_its_shard`` rather than the
tenth ``unexpected_rows_expectation``), while the suites stay data.

Why here and not in ``expectations/``: GX resolves an expectation ``type`` from suite
JSON through a registry filled when the class is *imported*. The classes must therefore
be importable wherever a suite is loaded (the Airflow worker, the spark-submit driver,
the CLI), which the installed package guarantees and a loose directory does not.

This module imports Great Expectations at module level, which TID253 forbids in
DAG-facing code; it is only ever imported from inside functions, when a suite is about to run.
"""

from __future__ import annotations

from typing import ClassVar

from great_expectations.expectations.core.unexpected_rows_expectation import (  # noqa: TID253
    UnexpectedRowsExpectation,
)

# Columns shown for an offending stream: enough to find and understand it.
_STREAM = "stream_id_hex, entry_index, shard, stream_token"


# --- entries (coverage) -----------------------------------------------------------------


class ExpectRangeEndsStrictlyIncreasing(UnexpectedRowsExpectation):
    """Entries sorted by ``token_range_end``, strictly: lookup's binary search needs it."""

    unexpected_rows_query: str = (
        "SELECT entry_index, range_end, previous_range_end FROM ("
        "SELECT entry_index, range_end, "
        "LAG(range_end) OVER (ORDER BY entry_index) AS previous_range_end FROM {batch}) "
        "WHERE previous_range_end IS NOT NULL AND range_end <= previous_range_end"
    )
    description: str = "Range ends strictly increase from entry to entry (no duplicates)."
    check: ClassVar[str] = "range ends strictly increasing"


class ExpectRangeEndsUnique(UnexpectedRowsExpectation):
    """Two entries ending at one token would make one of them unreachable by lookup."""

    unexpected_rows_query: str = (
        "SELECT entry_index, range_end, entries_with_this_end FROM ("
        "SELECT entry_index, range_end, "
        "COUNT(*) OVER (PARTITION BY range_end) AS entries_with_this_end FROM {batch}) "
        "WHERE entries_with_this_end > 1"
    )
    description: str = "No two entries share a range end."
    check: ClassVar[str] = "range ends unique"


class ExpectEveryEntryToHaveStreams(UnexpectedRowsExpectation):
    """An entry without streams leaves its vnode's writes nowhere to go."""

    unexpected_rows_query: str = (
        "SELECT entry_index, range_start, range_end, stream_count FROM {batch} "
        "WHERE stream_count < 1"
    )
    description: str = "Every entry has at least one stream."
    check: ClassVar[str] = "no entry without streams"


class ExpectRangeEndsToBeRingTokens(UnexpectedRowsExpectation):
    """With the entry count, ``is_cdc_generation_optimal``: every range end is a ring token."""

    unexpected_rows_query: str = (
        "SELECT entry_index, range_end FROM {batch} "
        "WHERE is_ring_token IS NULL OR NOT is_ring_token"
    )
    description: str = "Every range end is a token of the ring (optimal generation)."
    check: ClassVar[str] = "range ends are ring tokens"


class ExpectEntryStreamCountToMatchOwnerShards(UnexpectedRowsExpectation):
    """One stream per shard of the node owning the range end, as ScyllaDB builds it."""

    unexpected_rows_query: str = (
        "SELECT entry_index, range_end, stream_count, owner_shard_count FROM {batch} "
        "WHERE owner_shard_count IS NOT NULL AND stream_count <> owner_shard_count"
    )
    description: str = "Each entry has as many streams as its owning node has shards."
    check: ClassVar[str] = "stream count equals the owner's shard count"


class ExpectOwnerRangesToAgreeOnStreamCount(UnexpectedRowsExpectation):
    """Every range of one node holds one stream per shard of that node: the same number.
    What can be checked when the ring does not store shard counts (gossip)."""

    unexpected_rows_query: str = (
        "SELECT entry_index, range_end, owner, stream_count, fewest, most FROM ("
        "SELECT entry_index, range_end, owner, stream_count, "
        "MIN(stream_count) OVER (PARTITION BY owner) AS fewest, "
        "MAX(stream_count) OVER (PARTITION BY owner) AS most FROM {batch} "
        "WHERE owner IS NOT NULL) WHERE fewest <> most"
    )
    description: str = "Every range a node owns holds the same number of streams."
    check: ClassVar[str] = "a node's ranges hold equally many streams"


class ExpectSourceRowsToFormADescription(UnexpectedRowsExpectation):
    """The source reader refused the stored rows (the reason is in ``source_problem``);
    they were extracted anyway so the other checks can show where they are wrong."""

    unexpected_rows_query: str = (
        "SELECT entry_index, range_end, source_problem FROM {batch} "
        "WHERE source_problem IS NOT NULL AND entry_index = 0"
    )
    description: str = "The source reader accepted the stored rows as a description."
    check: ClassVar[str] = "the source's rows form a valid description"


class ExpectOneStreamPerTablet(UnexpectedRowsExpectation):
    """Tablets: each tablet has exactly one stream (``create_table_streams_mutation``)."""

    unexpected_rows_query: str = (
        "SELECT entry_index, range_start, range_end, stream_count FROM {batch} "
        "WHERE stream_count <> 1"
    )
    description: str = "Every tablet (entry) of a stream set has exactly one stream."
    check: ClassVar[str] = "one stream per tablet"


# --- streams (format) -------------------------------------------------------------------


class ExpectStreamIdsToBeSixteenBytes(UnexpectedRowsExpectation):
    """ScyllaDB maps a ``cdc$stream_id`` of any other length to the minimum token."""

    unexpected_rows_query: str = (
        "SELECT stream_id_hex, entry_index, shard, length(stream_id) AS byte_length "
        "FROM {batch} WHERE length(stream_id) <> 16"
    )
    description: str = "Every stream ID is exactly 16 bytes."
    check: ClassVar[str] = "stream IDs are 16 bytes"


class ExpectStreamIdVersionOne(UnexpectedRowsExpectation):
    """Version nibble 1: ScyllaDB rejects greater versions ("Unknown CDC stream id version")."""

    unexpected_rows_query: str = (
        f"SELECT {_STREAM}, version FROM {{batch}} WHERE length(stream_id) = 16 AND version <> 1"
    )
    description: str = "Every stream ID has version 1 in its low 4 bits."
    check: ClassVar[str] = "stream ID version is 1"


class ExpectIndexBitsToEqualEntryIndex(UnexpectedRowsExpectation):
    """Bits [4, 26) of the low qword name the vnode (entry) the stream belongs to."""

    unexpected_rows_query: str = (
        f"SELECT {_STREAM}, index_bits FROM {{batch}} "
        "WHERE length(stream_id) = 16 AND index_bits <> entry_index"
    )
    description: str = "Every stream ID's index bits equal its entry's index."
    check: ClassVar[str] = "index bits equal the entry index"


class ExpectTabletStreamIndexZero(UnexpectedRowsExpectation):
    """Tablets streams are ``stream_id(last_token, 0)``: no vnode index to encode."""

    unexpected_rows_query: str = (
        f"SELECT {_STREAM}, index_bits FROM {{batch}} "
        "WHERE length(stream_id) = 16 AND index_bits <> 0"
    )
    description: str = "Every tablet stream ID has index bits 0."
    check: ClassVar[str] = "tablet stream index bits are 0"


class ExpectStreamIdsUniqueInGeneration(UnexpectedRowsExpectation):
    """Two entries (or shards) sharing a stream would mix their changes."""

    unexpected_rows_query: str = (
        f"SELECT {_STREAM}, occurrences FROM ("
        f"SELECT {_STREAM}, COUNT(*) OVER (PARTITION BY stream_id) AS occurrences "
        "FROM {batch}) WHERE occurrences > 1"
    )
    description: str = "No stream ID appears twice in the generation."
    check: ClassVar[str] = "stream IDs unique"


PREVIOUS_STREAM_IDS_VIEW = "cdcgen_previous_stream_ids"
"""Temporary view of the previous generation's ``stream_id`` column (set by the runner)."""


class ExpectNoStreamReusedFromPreviousGeneration(UnexpectedRowsExpectation):
    """The random bits make reuse across generations unlikely; a reused ID is suspicious.

    Reads the previous generation's IDs from the temporary view
    :data:`PREVIOUS_STREAM_IDS_VIEW`, which :func:`validate_frames` registers in the
    same SparkSession (Spark plans the ``IN`` as a semi join: no per-row flag to build).
    """

    unexpected_rows_query: str = (
        f"SELECT {_STREAM} FROM {{batch}} "
        f"WHERE stream_id IN (SELECT stream_id FROM {PREVIOUS_STREAM_IDS_VIEW})"
    )
    description: str = "No stream ID of the previous generation appears again."
    check: ClassVar[str] = "no stream ID reused from the previous generation"


class ExpectShardingToBePossible(UnexpectedRowsExpectation):
    """``ignore_msb`` outside [0, 63] cannot shard a 64-bit token (no colocation possible)."""

    unexpected_rows_query: str = (
        f"SELECT {_STREAM}, ignore_msb FROM {{batch}} WHERE ignore_msb < 0 OR ignore_msb > 63"
    )
    description: str = "Every entry's sharding_ignore_msb is between 0 and 63."
    check: ClassVar[str] = "sharding parameters possible"


# --- streams (colocation) ---------------------------------------------------------------


class ExpectStreamTokenInsideEntryRange(UnexpectedRowsExpectation):
    """Vnode colocation: the log write lands on the same replicas as the base write."""

    unexpected_rows_query: str = (
        f"SELECT {_STREAM}, range_start, range_end FROM {{batch}} WHERE NOT ("
        "CASE WHEN range_start < range_end "
        "THEN stream_token > range_start AND stream_token <= range_end "
        # entry 0 (and a one-entry ring) wraps around: (start, MAX] and (MIN, end]
        "ELSE stream_token > range_start OR stream_token <= range_end END)"
    )
    description: str = (
        "Every stream's token lies in its entry's range (start, end], wrapping for entry 0."
    )
    check: ClassVar[str] = "vnode colocation"


class ExpectStreamTokenOnItsShard(UnexpectedRowsExpectation):
    """Shard colocation: stream ``j`` sits on shard ``j``'s first token, or on the range end."""

    unexpected_rows_query: str = (
        f"SELECT {_STREAM}, expected_first_token, range_end FROM {{batch}} "
        "WHERE expected_first_token IS NULL OR stream_token <> expected_first_token"
    )
    description: str = (
        "Stream j's token is the first token of shard j in its range, or the range end "
        "when the range holds no token of shard j."
    )
    check: ClassVar[str] = "shard colocation"


class ExpectStreamTokenToBeTabletLastToken(UnexpectedRowsExpectation):
    """Tablets colocation: the stream's token is its tablet's last token, so the log write
    goes to the tablet's replicas (and shard) like the base write."""

    unexpected_rows_query: str = (
        f"SELECT {_STREAM}, range_start, range_end FROM {{batch}} WHERE stream_token <> range_end"
    )
    description: str = "Every tablet stream's token is its tablet's last token."
    check: ClassVar[str] = "stream on its tablet's last token"


GENERATION_EXPECTATIONS: tuple[type[UnexpectedRowsExpectation], ...] = (
    ExpectRangeEndsStrictlyIncreasing,
    ExpectRangeEndsUnique,
    ExpectEveryEntryToHaveStreams,
    ExpectRangeEndsToBeRingTokens,
    ExpectEntryStreamCountToMatchOwnerShards,
    ExpectOwnerRangesToAgreeOnStreamCount,
    ExpectSourceRowsToFormADescription,
    ExpectOneStreamPerTablet,
    ExpectStreamIdsToBeSixteenBytes,
    ExpectStreamIdVersionOne,
    ExpectIndexBitsToEqualEntryIndex,
    ExpectTabletStreamIndexZero,
    ExpectStreamIdsUniqueInGeneration,
    ExpectNoStreamReusedFromPreviousGeneration,
    ExpectShardingToBePossible,
    ExpectStreamTokenInsideEntryRange,
    ExpectStreamTokenOnItsShard,
    ExpectStreamTokenToBeTabletLastToken,
)
"""Importing this module registers every class with GX; the tuple documents them."""
