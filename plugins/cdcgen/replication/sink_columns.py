"""The sink follows the source's added columns: ``ALTER TABLE <sink> ADD`` before a run.

A column added to a CDC table on the source (its log gains it, then the lake) would stop
the run at the shape check (:mod:`.sink_schema`: the sink lacks a source column). When
the sink can hold it exactly as the source does, the run adds it to the sink first, with
the source's CQL type and staticness, and checks the shape after: a column of a user type
the sink's keyspace does not define the same way is not added (the shape check then
refuses it by name, before anything is applied).

Only additions are replayed. A column dropped on the source stays on the sink with the
values it had, and keeps receiving the changes of it the lake holds from before the drop
(:func:`with_dropped_columns`); dropping it on the sink is the operator's call, since
the sink may serve readers of it.

``ADD`` is idempotent: the sink's definition is read again and only the columns it
still lacks are added, one statement each, so a run killed between two of them adds the
rest on its next start, and a column another run added meanwhile is left as it is (the adapter,
:meth:`cdcgen.adapters.table_schemas.CqlTableSchemas.add_column`, takes "already
exists" for done).
"""

from __future__ import annotations

from dataclasses import replace

from cdcgen.core.cql_types import ParsedType
from cdcgen.core.table_definition import TableDefinition, UserTypes
from cdcgen.ports import TableSchemas
from cdcgen.replication.sink_schema import is_udt


def columns_to_add(source: TableDefinition, sink: TableDefinition) -> list[str]:
    """The source's data columns the sink lacks and can be given as they are: every user
    type they use is defined on the sink as on the source."""
    keys = {*source.partition_key, *source.clustering_key}
    udts = source.parsed_user_types()
    wanted = []
    for name in source.data_columns:
        if name in sink.types or name in keys:
            continue
        used = _user_types(ParsedType.parse(source.types[name]), udts)
        if all(source.user_types.get(t) == sink.user_types.get(t) for t in used):
            wanted.append(name)
    return wanted


def with_columns(source: TableDefinition, sink: TableDefinition, names: list[str]
                 ) -> TableDefinition:  # fmt: skip
    """``sink`` as it is once ``names`` are added (what a dry run checks)."""
    return replace(
        sink,
        types={**sink.types, **{n: source.types[n] for n in names}},
        static=sink.static | (source.static & set(names)),
        cqltypes={**sink.cqltypes, **{n: source.cqltypes[n] for n in names}},
    )


def with_dropped_columns(source: TableDefinition, sink: TableDefinition,
                         lake_columns: set[str]) -> TableDefinition:  # fmt: skip
    """``source`` with the columns the source dropped that both the sink and the lake
    still hold, as the sink defines them: their changes logged before the drop are
    replayed like any other."""
    keys = {*sink.partition_key, *sink.clustering_key}
    kept = [n for n in sink.types if n not in source.types and n not in keys and n in lake_columns]
    if not kept:
        return source
    return replace(
        source,
        types={**source.types, **{n: sink.types[n] for n in kept}},
        static=source.static | (sink.static & set(kept)),
        cqltypes={**source.cqltypes, **{n: sink.cqltypes[n] for n in kept}},
        user_types={**sink.user_types, **source.user_types},
    )


def add_sink_columns(
    sink_tables: TableSchemas, source: TableDefinition, sink: TableDefinition, names: list[str]
) -> None:
    """Adds each of ``names`` (those the sink still lacks) to the sink table, with the
    source's type and staticness."""
    for name in names:
        sink_tables.add_column(sink.ref, name, source.types[name], name in source.static)


def _user_types(kind: ParsedType, udts: UserTypes) -> set[str]:
    found: set[str] = set()
    if is_udt(kind, udts):
        found.add(kind.name)
        for _, inner in udts[kind.name]:
            found |= _user_types(inner, udts)
    for arg in kind.args:
        found |= _user_types(arg, udts)
    return found
