"""The generation batches GX validates, as tables of one SQLite file.

GX reads the two generation batches from SQLite (its ``sqlite`` datasource) whichever
engine flagged the rows: ``entries`` (every entry, with the entry rules' flags: the
built-in row counts need the whole batch, a few thousand rows at most) and ``streams``
(only the streams with a flag set, usually none). SQLite is in-process: no JVM, no
server, a file in a temporary directory that lives as long as the validation.

For a small generation the flags are computed here too (:func:`flag_streams`, the
``sql`` engine): the streams and their ID counts are loaded into the same file and the
query of :mod:`.flag_sql` runs on them.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator, Sequence
from contextlib import closing, contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from cdcgen.validation import flag_sql
from cdcgen.validation.generation_rules import RowRule

if TYPE_CHECKING:
    import pyarrow as pa

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
    load_arrow(connection, flag_sql.ENTRIES_SOURCE, entries)
    connection.execute(f"CREATE TABLE {ENTRIES_TABLE} AS {flag_sql.entries_query(rules)}")


def flag_streams(
    connection: sqlite3.Connection,
    streams: pa.Table,
    counts: pa.Table | None,
    rules: Sequence[RowRule],
) -> None:
    """The ``sql`` engine: flag the streams here, keeping the offending ones (``counts``
    None: no ID repeats or is reused, and no counts table is made)."""
    load_arrow(connection, flag_sql.STREAMS_SOURCE, streams)
    if counts is not None:
        load_arrow(connection, flag_sql.COUNTS_SOURCE, counts)
    query = flag_sql.streams_query(rules, counted=counts is not None)
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
