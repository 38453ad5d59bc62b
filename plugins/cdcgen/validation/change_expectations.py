"""The row rules of extracted changes as named Great Expectations expectations.

Same pattern as :mod:`.generation_expectations`: each rule is an
:class:`UnexpectedRowsExpectation` with a fixed Spark SQL query returning the offending
rows, with what a person needs to find them (stream, ``cdc$time``, ``cdc$batch_seq_no``,
the base key). The suites in ``expectations/changes_*.json`` name them by type.

The queries run on the frames :mod:`cdcgen.changes.row_frames` prepares (one row per
change, log columns renamed without ``$``, plus the expected stream and the window and
generation bounds; and the per-stream counts, lake against source), checked by
:mod:`.change_rows`.

Imports Great Expectations at module level (TID253 forbids that in DAG-facing code):
only ever imported from inside functions, right before the suites run.
"""

from __future__ import annotations

from typing import ClassVar

from great_expectations.expectations.core.unexpected_rows_expectation import (  # noqa: TID253
    UnexpectedRowsExpectation,
)

_ROW = "stream_hex, cdc_time, batch_seq_no, write_time, operation_name, base_key"
_ORDER = "ORDER BY stream_hex, write_time, batch_seq_no"


class ExpectChangeInItsKeysStream(UnexpectedRowsExpectation):
    """Colocation: the row sits in the stream the generation maps its base key's token to."""

    unexpected_rows_query: str = (
        f"SELECT {_ROW}, base_token, expected_stream_hex, generation FROM {{batch}} "
        "WHERE expected_stream_hex IS NULL OR stream_hex <> expected_stream_hex " + _ORDER
    )
    description: str = (
        "Every change is in the stream that the generation operating at its write time maps "
        "Murmur3(base partition key) to."
    )
    check: ClassVar[str] = "change in its key's stream (colocation)"


class ExpectChangeInsideItsWindow(UnexpectedRowsExpectation):
    """``cdc$time`` inside the extraction window and the generation's span (± leeway)."""

    unexpected_rows_query: str = (
        f"SELECT {_ROW}, window, generation FROM {{batch}} "
        "WHERE write_time < window_start OR write_time >= window_end "
        "OR write_time < generation_low "
        "OR (generation_high IS NOT NULL AND write_time >= generation_high) " + _ORDER
    )
    description: str = (
        "Every change's cdc$time lies in its window [start, end) and in its generation's "
        "[T_g, T_next) widened by the generation leeway."
    )
    check: ClassVar[str] = "change inside its window and generation"


class ExpectCompleteBatches(UnexpectedRowsExpectation):
    """A write's rows: ``batch_seq_no`` dense from 0, ``end_of_batch`` exactly on the last."""

    unexpected_rows_query: str = (
        "SELECT stream_hex, cdc_time, batch_seq_no, end_of_batch, batch_rows, first_seq, "
        "last_seq, end_markers FROM ("
        "SELECT stream_hex, cdc_time, batch_seq_no, end_of_batch, write_time, "
        "COUNT(*) OVER (PARTITION BY stream_hex, cdc_time) AS batch_rows, "
        "MIN(batch_seq_no) OVER (PARTITION BY stream_hex, cdc_time) AS first_seq, "
        "MAX(batch_seq_no) OVER (PARTITION BY stream_hex, cdc_time) AS last_seq, "
        "SUM(CASE WHEN end_of_batch THEN 1 ELSE 0 END) "
        "OVER (PARTITION BY stream_hex, cdc_time) AS end_markers "
        "FROM {batch}) "
        "WHERE first_seq <> 0 OR last_seq <> batch_rows - 1 OR end_markers <> 1 "
        "OR (COALESCE(end_of_batch, FALSE) AND batch_seq_no <> last_seq) " + _ORDER
    )
    description: str = (
        "The rows of each write (stream, cdc$time) number 0..n-1 with no gap, and only the "
        "last one has cdc$end_of_batch = true."
    )
    check: ClassVar[str] = "batches complete"


class ExpectNoDuplicateChanges(UnexpectedRowsExpectation):
    """At-least-once upstream must become exactly once in the lake."""

    unexpected_rows_query: str = (
        "SELECT stream_hex, cdc_time, batch_seq_no, copies, write_time FROM ("
        "SELECT stream_hex, cdc_time, batch_seq_no, write_time, "
        "COUNT(*) OVER (PARTITION BY stream_hex, cdc_time, batch_seq_no) AS copies "
        "FROM {batch}) WHERE copies > 1 " + _ORDER
    )
    description: str = "No (stream, cdc$time, cdc$batch_seq_no) appears twice."
    check: ClassVar[str] = "no duplicate changes"


class ExpectKnownOperations(UnexpectedRowsExpectation):
    """``cdc$operation`` codes outside ScyllaDB's (0..9, and -3 and -4 for the deletes
    it makes itself) mean a newer ScyllaDB or a corrupt row."""

    unexpected_rows_query: str = (
        f"SELECT {_ROW}, operation FROM {{batch}} "
        "WHERE operation_name IS NULL OR operation_name LIKE 'unknown%' " + _ORDER
    )
    description: str = "Every cdc$operation is one of ScyllaDB's codes (0..9, -3, -4)."
    check: ClassVar[str] = "known operations"


class ExpectStreamRowCountsToMatchSource(UnexpectedRowsExpectation):
    """Per stream and window, the lake holds as many rows as the log (``COUNT(*)``)."""

    unexpected_rows_query: str = (
        "SELECT stream_hex, generation, window, bucket, lake_rows, source_rows FROM {batch} "
        "WHERE lake_rows <> source_rows ORDER BY generation, window, stream_hex"
    )
    description: str = (
        "For every stream of every extracted window, the lake's row count equals the "
        "source's COUNT(*) over the same window."
    )
    check: ClassVar[str] = "row count equals the source's"


CHANGE_EXPECTATIONS: tuple[type[UnexpectedRowsExpectation], ...] = (
    ExpectChangeInItsKeysStream,
    ExpectChangeInsideItsWindow,
    ExpectCompleteBatches,
    ExpectNoDuplicateChanges,
    ExpectKnownOperations,
    ExpectStreamRowCountsToMatchSource,
)
"""Importing this module registers every class with GX; the tuple documents them."""
