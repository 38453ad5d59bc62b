"""The demo's replication (raft mode, ``make demo``'s): ``cdc_replication`` into a sink
keyspace, twice, then both tables compared.

The sink is a keyspace of the same sandbox (the ``cdcgen_sink`` connection names the
same nodes), holding a table of the source's definition. The first run bootstraps it
from a snapshot; the source then changes more (across a switch, :mod:`.modes`), and the
second run applies those changes from the lake: ``applied_log_rows`` counts what it
replayed, by operation in ``applied_operations``. ``sink_matches_source`` comes from
reading both tables (every row with its write time), not from counting what was sent;
the one difference a bootstrap is known to leave (a row an ``UPDATE`` created has no row
marker on the source, CQL cannot tell, the copy gives it one: once every cell of it is
deleted, it stays on the sink, empty) is counted apart, in ``sink_extra_empty_rows``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from cdcgen.adapters.cql import CqlClient
    from cdcgen.config import PipelineConfig
    from cdcgen.core.replication_record import ReplicationRecord
    from cdcgen_dev.demo.steps import DagRunner

#: Where the demo replicates its CDC table (same table name).
SINK_KEYSPACE = "demo_shop_replica"


def prepare_sink(config: PipelineConfig, table: str) -> str:
    """A fresh sink keyspace with an empty table of the demo table's definition (the
    emulator's ``orders``, without its CDC log); its name."""
    from cdcgen.adapters.cql import client_for
    from cdcgen.core.cdc_log import TableRef
    from cdcgen_dev.emulator import orders_table
    from cdcgen_dev.emulator.log_schema import base_table_cql

    sink = TableRef(SINK_KEYSPACE, TableRef.parse(table).table)
    with client_for(config) as client:
        client.session.execute(f"DROP KEYSPACE IF EXISTS {sink.keyspace}", timeout=120)
        client.session.execute(
            f"CREATE KEYSPACE {sink.keyspace} WITH replication = "
            "{'class': 'SimpleStrategy', 'replication_factor': 1}",
            timeout=120,
        )
        client.session.execute(base_table_cql(orders_table(sink.keyspace, sink.table)), timeout=120)
    return sink.qualified


def bootstrap(runner: DagRunner, config: PipelineConfig, table: str) -> dict[str, Any]:
    """A fresh sink table, then ``cdc_replication``: a new sink is bootstrapped from a
    snapshot of ``table``; what the bootstrap copied."""
    sink_table = prepare_sink(config, table)
    _run(runner, config, table)
    copied = [r for r in _records(config, sink_table) if r.kind == "bootstrap"]
    return {"bootstrap_copied_rows": (copied[-1].copied_rows or 0) if copied else 0}


def replicate(runner: DagRunner, config: PipelineConfig, table: str) -> dict[str, Any]:
    """``cdc_replication`` again after more changes: the sink, what it applied, its rows
    and whether they match the source's."""
    from cdcgen.adapters.cql import client_for
    from cdcgen.core.cdc_log import TableRef

    sink_table = f"{SINK_KEYSPACE}.{TableRef.parse(table).table}"
    _run(runner, config, table)
    records = [r for r in _records(config, sink_table) if r.kind == "apply"]
    with client_for(config) as client:
        source_rows, sink_rows = contents(client, table), contents(client, sink_table)
        keys = len(key_columns(client, table))
    latest = records[-1] if records else None
    extra = [row for row in sink_rows if row not in source_rows]
    empty = [row for row in extra if all(v == "None" for v in row[keys:])]
    kept = [row for row in sink_rows if row not in empty]
    return {
        "sink_table": sink_table,
        "replicated_rows": len(sink_rows),
        "applied_log_rows": latest.applied_log_rows if latest else 0,
        "applied_operations": latest.applied_operations if latest else {},
        "sink_matches_source": kept == source_rows and bool(source_rows),
        "sink_extra_empty_rows": len(empty),
        "sink_consistent_until": latest.consistent_until if latest else None,
        "sink_lag_seconds": latest.lag_seconds if latest else None,
    }


def _run(runner: DagRunner, config: PipelineConfig, table: str) -> None:
    from cdcgen.airflow.connections import SINK_CONN_ID, connection_env, source_connection_for

    sink = source_connection_for(config)
    sink["extra"] = {"sink_keyspace": SINK_KEYSPACE, "replicated_tables": table}
    env = connection_env(SINK_CONN_ID, sink)
    runner.run("cdc_replication", summary_expected=False, extra_env=env)


def _records(config: PipelineConfig, sink_table: str) -> list[ReplicationRecord]:
    from cdcgen.reports.replication_records import load_records

    records, _ = load_records(config.report_dir)
    return [r for r in records if r.sink_table == sink_table]


def key_columns(client: CqlClient, table: str) -> list[str]:
    """The primary key's columns: :func:`contents` puts them first."""
    from cdcgen.core.cdc_log import TableRef

    ref = TableRef.parse(table)
    metadata = client.cluster.metadata.keyspaces[ref.keyspace].tables[ref.table]
    return [c.name for c in (*metadata.partition_key, *metadata.clustering_key)]


def contents(client: CqlClient, table: str) -> list[tuple[Any, ...]]:
    """Every row (its key first) with the write time of each atomic data column, sorted."""
    from cdcgen.core.cdc_log import TableRef
    from cdcgen.core.identifiers import quote

    ref = TableRef.parse(table)
    metadata = client.cluster.metadata.keyspaces[ref.keyspace].tables[ref.table]
    keys = {c.name for c in (*metadata.partition_key, *metadata.clustering_key)}
    names = [quote(n) for n in metadata.columns]
    atomic = [
        quote(name)
        for name, column in metadata.columns.items()
        if name not in keys and "<" not in str(column.cql_type)
    ]
    selected = ", ".join([*names, *(f"WRITETIME({n})" for n in atomic)])
    rows = client.session.execute(f"SELECT {selected} FROM {table}", timeout=60)
    return sorted(tuple(repr(v) for v in row) for row in rows)
