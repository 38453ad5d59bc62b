"""``ALTER TABLE`` of a CDC-enabled base table, and its log changed as ScyllaDB changes it.

On ScyllaDB an ALTER of a table whose ``cdc`` option is enabled rebuilds the log's schema
from the new base schema (``on_before_update_column_family`` -> ``create_log_schema`` in
``cdc/log.cc``, keeping the log's table ID):

* an added column appears in the log with its log type, ``"cdc$deleted_<col>" boolean``
  and, for a non-frozen collection or user type, ``"cdc$deleted_elements_<col>"``
  (:func:`~cdcgen_dev.emulator.log_schema.log_columns`); a static column the same way;
* a dropped column's log columns leave the log (registered as dropped there too, so rows
  written before stay readable without them);
* new CDC options re-derive the log's options from the TTL (the TWCS window,
  ``gc_grace_seconds``) and are recorded in the base table's ``cdc`` extension; later
  log rows are written with the new TTL. Pre- and postimage are options only here: the
  emulator writes no image rows.

Cassandra has no CDC, so the emulator runs the base table's ALTER and the log's itself,
then records the new definition. Each statement is derived from the difference between
the live tables and the wanted ones, so a call that died half way is finished by calling
it again, and a repeated call changes nothing.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from cdcgen_dev.emulator.cql_types import InvalidTableSpec, TypeKind
from cdcgen_dev.emulator.log_schema import (
    BaseTableSpec,
    Column,
    log_columns,
    log_table_options,
)
from cdcgen_dev.emulator.schema_setup import ddl
from cdcgen_dev.emulator.state import load_cdc_table, save_cdc_table
from cdcgen_dev.emulator.tables import record_cdc_options, spec_to_json, table_spec

if TYPE_CHECKING:
    from cdcgen.adapters.cql import CqlClient
    from cdcgen_dev.emulator.cluster import SandboxCluster

__all__ = [
    "AddColumn",
    "CdcOptions",
    "DropColumn",
    "SchemaChange",
    "alter_cdc_table",
    "altered_spec",
]


@dataclass(frozen=True, slots=True)
class AddColumn:
    """``ALTER TABLE ... ADD <column>`` (regular, static or a collection)."""

    column: Column


@dataclass(frozen=True, slots=True)
class DropColumn:
    """``ALTER TABLE ... DROP <name>`` of a data column (keys cannot be dropped)."""

    name: str


@dataclass(frozen=True, slots=True)
class CdcOptions:
    """``ALTER TABLE ... WITH cdc = {...}``: the options given; None keeps one as it is."""

    ttl: int | None = None
    preimage: bool | None = None
    postimage: bool | None = None


SchemaChange = AddColumn | DropColumn | CdcOptions


def droppable_here(column: Column) -> bool:
    """Whether the sandbox can drop ``column``: Cassandra refuses a non-frozen user type
    column (it cannot record its type among the dropped columns); ScyllaDB does not."""
    return not (column.type.kind is TypeKind.UDT and column.type.is_multi_cell)


def altered_spec(spec: BaseTableSpec, change: SchemaChange) -> BaseTableSpec:
    """The table's definition after ``change``; refuses what CQL refuses, by name.

    Adding a column the table already has with the same definition, or dropping one it
    no longer has, is the same definition (a repeated call)."""
    where = spec.qualified_table
    if isinstance(change, AddColumn):
        column = change.column
        if column.name in {c.name for c in spec.key_columns}:
            raise InvalidTableSpec(f"{where}: {column.name} is a key column already")
        existing = next((c for c in spec.columns if c.name == column.name), None)
        if existing is not None:
            if existing != column:
                raise InvalidTableSpec(
                    f"{where}: column {column.name} exists already as "
                    f"{existing.cql_type}{' static' if existing.static else ''}"
                )
            return spec
        return replace(spec, columns=(*spec.columns, column))
    if isinstance(change, DropColumn):
        if change.name in {c.name for c in spec.key_columns}:
            raise InvalidTableSpec(f"{where}: key column {change.name} cannot be dropped")
        if any(c.name == change.name and not droppable_here(c) for c in spec.columns):
            raise InvalidTableSpec(
                f"{where}: the sandbox's Cassandra cannot drop {change.name}, a non-frozen "
                'user type column ("Cannot drop non-frozen column"); ScyllaDB can, so the '
                "sandbox cannot play this change"
            )
        return replace(spec, columns=tuple(c for c in spec.columns if c.name != change.name))
    return replace(
        spec,
        cdc_ttl=spec.cdc_ttl if change.ttl is None else change.ttl,
        preimage=spec.preimage if change.preimage is None else change.preimage,
        postimage=spec.postimage if change.postimage is None else change.postimage,
    )


def alter_cdc_table(
    cluster: SandboxCluster, keyspace: str, table: str, change: SchemaChange
) -> BaseTableSpec:
    """ALTER the base table and its log as ScyllaDB would; the table's new definition,
    recorded for the workload (its later writes use the new columns and TTL)."""
    spec = altered_spec(table_spec(cluster, keyspace, table), change)
    client = cluster.client
    base_columns = {
        c.name: f"{c.type.cql()}{' STATIC' if c.static else ''}"
        for c in (*spec.key_columns, *spec.columns)
    }
    _alter_columns(client, spec.keyspace, spec.table, base_columns)
    wanted_log = {name.strip('"'): cql_type for name, cql_type in log_columns(spec)}
    _alter_columns(client, spec.keyspace, spec.log_table, wanted_log, quoted=True)
    if isinstance(change, CdcOptions):
        options = " AND ".join(log_table_options(spec))
        ddl(client, f"ALTER TABLE {spec.qualified_log_table} WITH {options}")
    record = load_cdc_table(client, cluster.schema, keyspace, table)
    save_cdc_table(
        client,
        cluster.schema,
        replace(record, spec_json=spec_to_json(spec), cdc_ttl=spec.cdc_ttl),
    )
    record_cdc_options(cluster, spec)
    return spec


def _alter_columns(
    client: CqlClient,
    keyspace: str,
    table: str,
    wanted: dict[str, str],
    *,
    quoted: bool = False,
) -> None:
    """Adds the columns of ``wanted`` (name -> CQL type) the live table lacks and drops
    the ones it has beyond them (names allow-listed by the spec)."""
    client.cluster.refresh_table_metadata(keyspace, table)
    live = client.cluster.metadata.keyspaces[keyspace].tables[table].columns
    name = (lambda n: f'"{n}"') if quoted else (lambda n: n)
    added = [f"{name(c)} {cql_type}" for c, cql_type in wanted.items() if c not in live]
    dropped = [name(c) for c in live if c not in wanted]
    if added:
        ddl(client, f"ALTER TABLE {keyspace}.{table} ADD ({', '.join(added)})")
    if dropped:
        ddl(client, f"ALTER TABLE {keyspace}.{table} DROP ({', '.join(dropped)})")
