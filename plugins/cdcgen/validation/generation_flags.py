"""Steps 1 and 2 of a generation's validation: flag its rows, store them in SQLite.

The entries (all of them) and the offending streams, each row with every active rule's
flag (:mod:`.flag_sql`), go into one SQLite file, where GX then checks them
(:mod:`.generation_suite`). The streams are flagged by the chosen engine
(:mod:`.flag_engines`); the stream ID counts both engines join come from
:mod:`.stream_id_counts`.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING

from cdcgen.validation import generation_inputs as inputs
from cdcgen.validation import sqlite_batches
from cdcgen.validation.flag_engines import Engine, flag_on_spark
from cdcgen.validation.flag_sql import needs_counts
from cdcgen.validation.generation_inputs import GenerationBatches
from cdcgen.validation.generation_rules import RowRule, rules_of
from cdcgen.validation.stream_id_counts import stream_id_counts
from cdcgen.validation.suites import SuiteSpec

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import SparkSession

#: A Spark session, or how to get one (started only if the Spark engine runs).
SparkSource = Callable[[], "SparkSession"]


def flag_into(
    database: Path,
    batches: GenerationBatches,
    suites: Sequence[SuiteSpec],
    engine: Engine,
    spark: SparkSource,
) -> None:
    """Steps 1 and 2: the entries (all) and the offending streams, flagged, into SQLite.

    On Spark, the streams are flagged in a worker thread while this one reads the
    description for the entries: the thread mostly waits for pyarrow and the JVM, which
    leave Python free, so the two overlap instead of adding up.
    """
    names = [str(e["type"]) for suite in suites for e in suite.expectations]
    stream_rules = rules_of(names, "streams")
    entry_rules = rules_of(names, "entries")
    if engine == "sql":
        streams = inputs.streams_arrow(batches.streams)
        counts = counts_of(streams, batches.previous, stream_rules)
        with sqlite_batches.connect(database) as connection:
            sqlite_batches.flag_entries(connection, batches.entries(), entry_rules)
            sqlite_batches.flag_streams(connection, streams, counts, stream_rules)
        return
    session = spark()  # started here: a session is not something to start in a thread

    def flag_streams() -> pa.Table:
        counts = counts_of(
            inputs.as_arrow(batches.streams, ("stream_id",)), batches.previous, stream_rules
        )
        frame = inputs.as_frame(session, batches.streams)
        with tempfile.TemporaryDirectory(prefix=".cdcgen-validation-", dir=batches.scratch) as tmp:
            return flag_on_spark(session, frame, counts, stream_rules, Path(tmp))

    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="cdcgen-flags") as pool:
        flagged = pool.submit(flag_streams)
        with sqlite_batches.connect(database) as connection:
            sqlite_batches.flag_entries(connection, batches.entries(), entry_rules)
            sqlite_batches.store_flagged_streams(connection, flagged.result())


def counts_of(
    streams: pa.Table, previous: inputs.Rows | None, rules: Sequence[RowRule]
) -> pa.Table | None:
    """The stream ID counts, if some rule reads them and some ID has one (None: every ID
    occurs once and is new, which the flag pass then assumes without a join)."""
    if not needs_counts(rules):
        return None
    before = None if previous is None else inputs.as_arrow(previous, ("stream_id",))["stream_id"]
    counts: pa.Table = stream_id_counts(streams["stream_id"], before)
    return counts if counts.num_rows else None
