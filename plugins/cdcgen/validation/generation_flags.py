"""Steps 1 and 2 of a generation's validation: flag every row in one pass, store the
flagged rows in SQLite, where GX then checks them (:mod:`.generation_suite`).

The rules of :mod:`.generation_rules` become one query: for each batch, one ``SELECT``
computes the derived columns the active rules use, then one boolean column per rule
(``<condition> IS TRUE``: a null comparison is no violation), and (streams) keeps only
the rows with a flag set. The text is the SQL Spark and SQLite share, so the same query
runs on Spark over a lake partition of a large generation or in SQLite over a
description of a few thousand streams, and both give the same rows (a test runs every
corruption through both). The ID rules (``occurrences > 1``, ``reused``) compare two
facts per stream ID computed once, for both engines, with pyarrow's hash kernels over
the ID column alone; only the IDs for which they differ from "once here, new" are kept
(usually none), so the table joined back is tiny.

Two engines run the query over the streams:

* ``sql``: SQLite in this process. Nothing to start, so a description of a few thousand
  streams is checked quickly; but it loads every row through Python, which for a large
  generation costs more than Spark's scan.
* ``spark``: a Spark session reads the lake partition itself, column-pruned, and returns
  only the offending rows as Arrow.

:func:`choose_engine` decides from the setting (``CDCGEN_VALIDATION_ENGINE``) and the
stream count (``CDCGEN_VALIDATION_SQL_MAX_STREAMS``). Either way GX then checks the
flagged rows in SQLite (``entries``: every entry with the entry rules' flags, the
built-in row counts need the whole batch; ``streams``: only the flagged ones), so the
verdicts and reports do not depend on the engine. The streams come from an extracted
generation (the Parquet files of the table version validation reads) or an Arrow table
(a description flattened in memory, for the command line), and so do the previous
generation's stream IDs; the entries always come from the description.
"""

from __future__ import annotations

import re
import sqlite3
import tempfile
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import closing, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal, TypeAlias

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from cdcgen.core.ring import Ring
from cdcgen.generation_lake.description_columns import DescriptionColumns
from cdcgen.generation_lake.description_json import read_description_file
from cdcgen.generation_lake.lake_tables import GenerationArtifact
from cdcgen.generation_lake.streams_table import entries_table, stream_id_table
from cdcgen.validation.generation_rules import (
    ENTRY_DERIVED,
    ROW_ORDER,
    SOURCE_COLUMNS,
    STREAM_DERIVED,
    STREAM_ID_COUNTS,
    Batch,
    RowRule,
    rules_of,
)
from cdcgen.validation.suites import SuiteSpec

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession


# --- The query: every active rule's flag, in one pass -----------------------------


STREAMS_SOURCE = "cdcgen_streams"
ENTRIES_SOURCE = "cdcgen_entries"
COUNTS_SOURCE = "cdcgen_stream_id_counts"

#: What an ID with no count row has: it occurs once here and not in the previous one.
_ID_DEFAULTS = {"occurrences": "1", "reused": "FALSE"}


def needs_counts(rules: Sequence[RowRule]) -> bool:
    """Whether some rule reads :data:`STREAM_ID_COUNTS` (then :data:`COUNTS_SOURCE` must exist)."""
    return bool(used(STREAM_ID_COUNTS, rules))


def used(names: Iterable[str], rules: Sequence[RowRule]) -> list[str]:
    """The names among ``names`` that some rule's condition or shown columns mention."""
    text = " ".join(rule.condition + " " + " ".join(rule.shown) for rule in rules)
    return [name for name in names if re.search(rf"\b{re.escape(name)}\b", text)]


def output_columns(rules: Sequence[RowRule], batch: Batch) -> list[str]:
    """The columns of the flagged batch: row order, every shown column, every flag."""
    columns = list(ROW_ORDER[batch])
    for rule in rules:
        columns.extend(c for c in rule.shown if c not in columns)
    return columns + [rule.flag for rule in rules]


def entries_query(rules: Sequence[RowRule]) -> str:
    """Every entry with the active entry rules' flags (the whole batch: GX counts it)."""
    return _flagged(rules, "entries", _with_derived(ENTRIES_SOURCE, ENTRY_DERIVED, rules))


def streams_query(rules: Sequence[RowRule], *, counted: bool = True) -> str:
    """The streams breaking at least one active stream rule, with every flag.

    ``counted=False`` says the counts table has no rows (no ID repeats, none is reused:
    the usual case), so every ID takes :data:`_ID_DEFAULTS` without a join and
    :data:`COUNTS_SOURCE` need not exist. On a cold Spark session the join of an empty
    table cost more than the rest of the pass.
    """
    rows = _with_derived(STREAMS_SOURCE, STREAM_DERIVED, rules)
    counts = used(STREAM_ID_COUNTS, rules)
    if counts:
        rows = _with_id_counts(rows, counts) if counted else _with_id_defaults(rows, counts)
    flags = " OR ".join(rule.flag for rule in rules) or "FALSE"
    return f"SELECT * FROM ({_flagged(rules, 'streams', rows)}) flagged WHERE {flags}"


def _with_derived(source: str, derived: Mapping[str, str], rules: Sequence[RowRule]) -> str:
    extra = "".join(f", {derived[name]} AS {name}" for name in used(derived, rules))
    return f"SELECT *{extra} FROM {source}"


def _flagged(rules: Sequence[RowRule], batch: Batch, rows: str) -> str:
    shown = [c for c in output_columns(rules, batch) if c not in {r.flag for r in rules}]
    flags = [f"({rule.condition}) IS TRUE AS {rule.flag}" for rule in rules]
    return f"SELECT {', '.join(shown + flags)} FROM ({rows}) {batch}_rows"


def _with_id_counts(rows: str, counts: list[str]) -> str:
    """``rows`` with the :data:`STREAM_ID_COUNTS` of their IDs; an ID the counts table
    leaves out takes :data:`_ID_DEFAULTS` (once here, new), which is what it has."""
    values = ", ".join(
        f"COALESCE(counted.{name}, {_ID_DEFAULTS[name]}) AS {name}" for name in counts
    )
    return (
        f"SELECT rows_.*, {values} FROM ({rows}) rows_ "
        f"LEFT JOIN {COUNTS_SOURCE} counted ON counted.stream_id = rows_.stream_id"
    )


def _with_id_defaults(rows: str, counts: list[str]) -> str:
    """``rows`` with the :data:`STREAM_ID_COUNTS` an ID without a count row has."""
    values = ", ".join(f"{_ID_DEFAULTS[name]} AS {name}" for name in counts)
    return f"SELECT rows_.*, {values} FROM ({rows}) rows_"


# --- The batches, in the form each engine reads them ------------------------------


#: Column of the entries batch holding the source reader's objection (null: none).
SOURCE_PROBLEM_COLUMN = "source_problem"

#: Streams or stream IDs: an extracted generation (the files of its version), or the
#: rows themselves.
Rows: TypeAlias = GenerationArtifact | pa.Table


@dataclass(frozen=True)
class GenerationBatches:
    """One generation's inputs: its streams, entries, previous IDs, ring and layout, and
    where the Spark engine may put files its executors read (the lake, in a temporary
    hidden directory; None: the system's temporary directory)."""

    streams: Rows
    entries: Callable[[], pa.Table]  # read when needed: it overlaps the Spark pass
    previous: Rows | None
    ring: Ring | None
    layout: str
    scratch: Path | None


def entries_batch(
    columns: DescriptionColumns, ring: Ring | None, source_problem: str | None
) -> pa.Table:
    """One row per entry; the source reader's verdict travels as a column, so a GX
    expectation (and so Data Docs) reports it beside the checks that show what is wrong."""
    table = entries_table(columns, ring)
    problem = pa.array([source_problem] * table.num_rows, pa.string())
    return table.append_column(SOURCE_PROBLEM_COLUMN, problem)


def previous_rows(
    previous: GenerationArtifact | Path | DescriptionColumns | None,
) -> Rows | None:
    """The previous generation's IDs: an extracted one as is, a description (columns or
    a JSON file) as IDs."""
    if previous is None or isinstance(previous, GenerationArtifact):
        return previous
    if isinstance(previous, DescriptionColumns):
        columns = previous
    else:
        columns = read_description_file(previous)
    ids: pa.Table = stream_id_table(columns)
    return ids


def as_arrow(rows: Rows, columns: tuple[str, ...]) -> pa.Table:
    """``columns`` of the rows, for SQLite; an extraction's files are read with pyarrow."""
    if isinstance(rows, pa.Table):
        return rows.select(list(columns))
    import pyarrow.parquet as pq

    if not rows.files:
        return pq.ParquetDataset([]).read(columns=list(columns))
    filesystem = rows.files[0].arrow()[0]
    files = [path.arrow()[1] for path in rows.files]
    return pq.ParquetDataset(files, filesystem=filesystem).read(columns=list(columns))


def streams_arrow(rows: Rows) -> pa.Table:
    """The stream columns the rules read."""
    return as_arrow(rows, SOURCE_COLUMNS["streams"])


def as_frame(spark: SparkSession, rows: Rows) -> DataFrame:
    """The rows as a DataFrame; a partition is read by Spark (it is the artifact)."""
    from cdcgen.generation_lake.spark_extract import read_streams

    if isinstance(rows, pa.Table):
        return spark.createDataFrame(rows)
    return read_streams(spark, rows)


# --- The stream ID counts the ID rules compare ------------------------------------


def stream_id_counts(
    current: pa.ChunkedArray | pa.Array, previous: pa.ChunkedArray | pa.Array | None
) -> pa.Table:
    """The IDs of ``current`` occurring more than once or also in ``previous``, with
    ``occurrences`` (how often in ``current``) and ``reused`` (whether in ``previous``)."""
    if _all_distinct(current, previous):
        return pa.table(
            {
                "stream_id": pa.array([], pa.binary()),
                "occurrences": pa.array([], pa.int64()),
                "reused": pa.array([], pa.bool_()),
            }
        )
    counted = pc.value_counts(current)
    ids = counted.field("values")
    occurrences = counted.field("counts")
    if previous is None or len(previous) == 0:
        reused = pa.nulls(len(ids), pa.bool_()).fill_null(False)
    else:
        reused = pc.fill_null(pc.is_in(ids, value_set=_combined(previous)), False)
    keep = pc.or_(pc.greater(occurrences, 1), reused)
    return pa.table(
        {
            "stream_id": ids.filter(keep).cast(pa.binary()),
            "occurrences": occurrences.filter(keep),
            "reused": reused.filter(keep),
        }
    )


def _combined(values: pa.ChunkedArray | pa.Array) -> pa.Array:
    return values.combine_chunks() if isinstance(values, pa.ChunkedArray) else values


def _all_distinct(
    current: pa.ChunkedArray | pa.Array, previous: pa.ChunkedArray | pa.Array | None
) -> bool:
    """Whether the IDs of ``current`` and ``previous`` together are surely all distinct:
    true only if all are 16 bytes and no two share their low eight bytes, the random
    and index bits. Sorting those as integers costs far less than the hash kernel; when
    it cannot tell (other lengths, a shared low half), the kernel decides.
    """
    parts = [_combined(current)] + ([] if previous is None else [_combined(previous)])
    halves = []
    for ids in parts:
        if len(ids) == 0:
            continue
        if ids.null_count or pc.min_max(pc.binary_length(ids)).as_py() != {"min": 16, "max": 16}:
            return False
        fixed = ids.cast(pa.binary(16))
        start = fixed.offset * 16
        rows = np.frombuffer(fixed.buffers()[1], dtype=np.uint8)[start : start + 16 * len(ids)]
        halves.append(rows.reshape(-1, 16)[:, 8:].copy().view(np.uint64).reshape(-1))
    if not halves:
        return True
    low = np.sort(np.concatenate(halves))
    return not bool(np.any(low[1:] == low[:-1]))


# --- Which engine flags the streams, and the Spark one ----------------------------


Engine = Literal["sql", "spark"]
ENGINES: tuple[Engine, ...] = ("sql", "spark")


def choose_engine(setting: str, streams: int, sql_max_streams: int) -> Engine:
    """``setting`` itself, or for ``auto`` SQLite up to ``sql_max_streams`` streams."""
    if setting == "auto":
        return "sql" if streams <= sql_max_streams else "spark"
    if setting not in ENGINES:
        raise ValueError(f"unknown validation engine {setting!r}; known: auto, sql, spark")
    return "sql" if setting == "sql" else "spark"


def flag_on_spark(
    spark: SparkSession,
    streams: DataFrame,
    counts: pa.Table | None,
    rules: Sequence[RowRule],
    scratch: Path,
) -> pa.Table:
    """The offending streams with every flag, computed by Spark in one query.

    The inputs are exposed to the query as temporary views, dropped afterwards. The
    counts reach Spark as a Parquet file in ``scratch`` (a directory Spark's executors
    can read, like the lake): usually there are none (``None``: no join at all), but they
    can be as many as the streams when a generation repeats the previous one, too many
    to hand over through the driver.
    """
    import pyarrow.parquet as pq

    views = [STREAMS_SOURCE]
    streams.createOrReplaceTempView(STREAMS_SOURCE)
    if counts is not None:
        path = scratch / "stream_id_counts.parquet"
        pq.write_table(counts, path)
        spark.read.parquet(str(path)).createOrReplaceTempView(COUNTS_SOURCE)
        views.append(COUNTS_SOURCE)
    try:
        return spark.sql(streams_query(rules, counted=counts is not None)).toArrow()
    finally:
        for view in views:
            spark.catalog.dropTempView(view)


# --- The SQLite file GX reads, and the sql engine ---------------------------------


#: The GX batch names, which are also their table names.
ENTRIES_TABLE = "entries"
STREAMS_TABLE = "streams"
#: Rows turned into Python values at a time: bounds memory when many rows are flagged.
_ROWS_PER_INSERT = 65_536


@contextmanager
def connect(database: Path) -> Iterator[sqlite3.Connection]:
    """A connection that commits on success (a throwaway file: no durability wanted)."""
    with closing(sqlite3.connect(database)) as connection:
        connection.execute("PRAGMA journal_mode = OFF")
        connection.execute("PRAGMA synchronous = OFF")
        with connection:
            yield connection


def load_arrow(connection: sqlite3.Connection, name: str, table: pa.Table) -> None:
    """Create table ``name`` with the Arrow table's columns and rows."""
    columns = ", ".join(f'"{f.name}" {_sqlite_type(f.type)}' for f in table.schema)
    connection.execute(f'CREATE TABLE "{name}" ({columns})')
    marks = ", ".join("?" for _ in table.schema)
    for batch in table.to_batches(max_chunksize=_ROWS_PER_INSERT):
        rows = zip(*(column.to_pylist() for column in batch.columns), strict=True)
        connection.executemany(f'INSERT INTO "{name}" VALUES ({marks})', rows)


def flag_entries(
    connection: sqlite3.Connection, entries: pa.Table, rules: Sequence[RowRule]
) -> None:
    """Load the entries and derive the GX batch :data:`ENTRIES_TABLE` from them."""
    load_arrow(connection, ENTRIES_SOURCE, entries)
    connection.execute(f"CREATE TABLE {ENTRIES_TABLE} AS {entries_query(rules)}")


def flag_streams(
    connection: sqlite3.Connection,
    streams: pa.Table,
    counts: pa.Table | None,
    rules: Sequence[RowRule],
) -> None:
    """The ``sql`` engine: flag the streams here, keeping the offending ones (``counts``
    None: no ID repeats or is reused, and no counts table is made)."""
    load_arrow(connection, STREAMS_SOURCE, streams)
    if counts is not None:
        load_arrow(connection, COUNTS_SOURCE, counts)
    query = streams_query(rules, counted=counts is not None)
    connection.execute(f"CREATE TABLE {STREAMS_TABLE} AS {query}")


def store_flagged_streams(connection: sqlite3.Connection, flagged: pa.Table) -> None:
    """The ``spark`` engine flagged the streams elsewhere: store its (few) rows."""
    load_arrow(connection, STREAMS_TABLE, flagged)


def _sqlite_type(arrow_type: pa.DataType) -> str:
    import pyarrow as pa

    if pa.types.is_integer(arrow_type) or pa.types.is_boolean(arrow_type):
        return "INTEGER"
    if pa.types.is_binary(arrow_type) or pa.types.is_large_binary(arrow_type):
        return "BLOB"
    if pa.types.is_floating(arrow_type):
        return "REAL"
    return "TEXT"


# --- Steps 1 and 2: flag the rows, store them in SQLite ---------------------------


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
    names = [e.type for suite in suites for e in suite.expectations]
    stream_rules = rules_of(names, "streams")
    entry_rules = rules_of(names, "entries")
    if engine == "sql":
        streams = streams_arrow(batches.streams)
        counts = counts_of(streams, batches.previous, stream_rules)
        with connect(database) as connection:
            flag_entries(connection, batches.entries(), entry_rules)
            flag_streams(connection, streams, counts, stream_rules)
        return
    session = spark()  # started here: a session is not something to start in a thread

    def flag_streams_on_spark() -> pa.Table:
        counts = counts_of(
            as_arrow(batches.streams, ("stream_id",)), batches.previous, stream_rules
        )
        frame = as_frame(session, batches.streams)
        with tempfile.TemporaryDirectory(prefix=".cdcgen-validation-", dir=batches.scratch) as tmp:
            return flag_on_spark(session, frame, counts, stream_rules, Path(tmp))

    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="cdcgen-flags") as pool:
        flagged = pool.submit(flag_streams_on_spark)
        with connect(database) as connection:
            flag_entries(connection, batches.entries(), entry_rules)
            store_flagged_streams(connection, flagged.result())


def counts_of(
    streams: pa.Table, previous: Rows | None, rules: Sequence[RowRule]
) -> pa.Table | None:
    """The stream ID counts, if some rule reads them and some ID has one (None: every ID
    occurs once and is new, which the flag pass then assumes without a join)."""
    if not needs_counts(rules):
        return None
    before = None if previous is None else as_arrow(previous, ("stream_id",))["stream_id"]
    counts: pa.Table = stream_id_counts(streams["stream_id"], before)
    return counts if counts.num_rows else None
