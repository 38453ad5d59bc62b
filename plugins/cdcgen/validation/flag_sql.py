"""The one pass that flags every row: the rules of :mod:`.generation_rules` as one query.

For each batch, one ``SELECT`` computes the derived columns the active rules use, then
one boolean column per rule (``<condition> IS TRUE``: a null comparison is no
violation), and (streams) keeps only the rows with a flag set. The text is the SQL
Spark and SQLite share, so the same query runs on Spark over a lake partition of
1.6 million streams or in SQLite over a description of a few thousand, and both give the
same rows (a test runs every corruption through both).

The tables it reads, by name: :data:`STREAMS_SOURCE`, :data:`ENTRIES_SOURCE` and, when
the reuse rule runs, :data:`PREVIOUS_SOURCE` (one ``stream_id`` column).

Two choices made for Spark's sake, harmless in SQLite: the stream ID counts are a
``GROUP BY`` over the IDs alone, joined back (shuffling 16-byte keys, not whole rows);
and that join carries a ``BROADCAST`` hint, which SQLite reads as a comment.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence

from cdcgen.validation.generation_rules import (
    ENTRY_DERIVED,
    ROW_ORDER,
    STREAM_DERIVED,
    STREAM_ID_COUNTS,
    Batch,
    RowRule,
)

STREAMS_SOURCE = "cdcgen_streams"
ENTRIES_SOURCE = "cdcgen_entries"
PREVIOUS_SOURCE = "cdcgen_previous_stream_ids"

#: What an ID with no count row means: it occurs once here and not in the previous one.
_ID_DEFAULTS = {"occurrences": "1", "reused": "FALSE"}


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


def streams_query(rules: Sequence[RowRule], *, with_previous: bool) -> str:
    """The streams breaking at least one active stream rule, with every flag."""
    rows = _with_derived(STREAMS_SOURCE, STREAM_DERIVED, rules)
    counts = used(STREAM_ID_COUNTS, rules)
    if counts:
        rows = _with_id_counts(rows, counts, with_previous=with_previous)
    flags = " OR ".join(rule.flag for rule in rules) or "FALSE"
    return f"SELECT * FROM ({_flagged(rules, 'streams', rows)}) flagged WHERE {flags}"


def _with_derived(source: str, derived: Mapping[str, str], rules: Sequence[RowRule]) -> str:
    extra = "".join(f", {derived[name]} AS {name}" for name in used(derived, rules))
    return f"SELECT *{extra} FROM {source}"


def _flagged(rules: Sequence[RowRule], batch: Batch, rows: str) -> str:
    shown = [c for c in output_columns(rules, batch) if c not in {r.flag for r in rules}]
    flags = [f"({rule.condition}) IS TRUE AS {rule.flag}" for rule in rules]
    return f"SELECT {', '.join(shown + flags)} FROM ({rows}) {batch}_rows"


def _with_id_counts(rows: str, counts: list[str], *, with_previous: bool) -> str:
    """``rows`` with :data:`STREAM_ID_COUNTS` per stream ID.

    Only IDs that occur more than once here or also occurred in the previous generation
    get a count row; every other ID takes :data:`_ID_DEFAULTS` (once here, new), which
    is exactly what its counts would be.
    """
    ids = f"SELECT stream_id, 1 AS in_generation, 0 AS in_previous FROM {STREAMS_SOURCE}"
    if with_previous:
        ids += f" UNION ALL SELECT stream_id, 0, 1 FROM {PREVIOUS_SOURCE}"
    measures = ", ".join(f"{STREAM_ID_COUNTS[name]} AS {name}" for name in counts)
    grouped = (
        f"SELECT stream_id, {measures} FROM ({ids}) ids GROUP BY stream_id "
        "HAVING SUM(in_generation) > 0 AND (SUM(in_generation) > 1 OR MAX(in_previous) = 1)"
    )
    values = ", ".join(
        f"COALESCE(counted.{name}, {_ID_DEFAULTS[name]}) AS {name}" for name in counts
    )
    return (
        f"SELECT /*+ BROADCAST(counted) */ rows_.*, {values} FROM ({rows}) rows_ "
        f"LEFT JOIN ({grouped}) counted ON counted.stream_id = rows_.stream_id"
    )
