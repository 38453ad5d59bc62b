"""The one pass that flags every row: the rules of :mod:`.generation_rules` as one query.

For each batch, one ``SELECT`` computes the derived columns the active rules use, then
one boolean column per rule (``<condition> IS TRUE``: a null comparison is no
violation), and (streams) keeps only the rows with a flag set. The text is the SQL
Spark and SQLite share, so the same query runs on Spark over a lake partition of
1.6 million streams or in SQLite over a description of a few thousand, and both give the
same rows (a test runs every corruption through both).

The tables it reads, by name: :data:`STREAMS_SOURCE`, :data:`ENTRIES_SOURCE` and, when
an ID rule runs, :data:`COUNTS_SOURCE` (:mod:`.stream_id_counts`: the IDs that occur
more than once or were in the previous generation; usually none, so Spark broadcasts it
by itself, and when a corrupt generation makes it large, Spark joins it by sorting).
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
