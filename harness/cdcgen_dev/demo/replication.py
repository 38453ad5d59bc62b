"""The demo's last step: ``cdc_replication`` into a sink keyspace, then both tables compared.

The sink is a keyspace of the same sandbox (the ``cdcgen_sink`` connection names the
same nodes), holding a table of the source's definition. ``sink_matches_source`` comes
from reading both tables (every row with its write time), not from counting what was
sent.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from cdcgen.adapters.cql import CqlClient
    from cdcgen.config import PipelineConfig
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


def replicate(runner: DagRunner, config: PipelineConfig, table: str) -> dict[str, Any]:
    """Run ``cdc_replication`` for ``table``; the sink, its rows and whether they match."""
    from cdcgen.adapters.cql import client_for
    from cdcgen.airflow.connections import SINK_CONN_ID, connection_env, source_connection_for
    from cdcgen.reports.replication_records import load_records

    sink_table = prepare_sink(config, table)
    sink = source_connection_for(config)
    sink["extra"] = {"sink_keyspace": SINK_KEYSPACE, "replicated_tables": table}
    runner.run(
        "cdc_replication", summary_expected=False, extra_env=connection_env(SINK_CONN_ID, sink)
    )
    records = [r for r in load_records(config.report_dir) if r["sink_table"] == sink_table]
    with client_for(config) as client:
        source_rows, sink_rows = contents(client, table), contents(client, sink_table)
    latest = records[-1] if records else {}
    return {
        "sink_table": sink_table,
        "replicated_rows": len(sink_rows),
        "sink_matches_source": source_rows == sink_rows and bool(source_rows),
        "sink_consistent_until": latest.get("consistent_until"),
        "sink_lag_seconds": latest.get("lag_seconds"),
    }


def contents(client: CqlClient, table: str) -> list[tuple[Any, ...]]:
    """Every row with the write time of each atomic data column, sorted."""
    from cdcgen.core.cdc_log import TableRef
    from cdcgen.core.replication import quote

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
