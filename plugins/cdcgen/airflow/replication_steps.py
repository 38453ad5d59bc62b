"""Task bodies of ``cdc_replication``: Airflow in, one replication call, JSON out.

The sink is the ``cdcgen_sink`` connection: its hosts, port, login and password, TLS
extras like a source connection's, and ``sink_keyspace`` (where the tables go, same
names) and ``replicated_tables`` (``ks.t,...``); the run's Params may override both.
The lake and the changes pipeline's progress are the ``cdc_source`` side's.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from cdcgen.airflow.connections import SINK_CONN_ID
from cdcgen.airflow.failures import fail_fast
from cdcgen.airflow.generation_steps import run_config
from cdcgen.airflow.hooks import CdcSourceHook


def _sink(params: Mapping[str, Any]) -> tuple[Any, str, str]:
    """The sink's configuration, its keyspace and the tables to replicate."""
    from airflow.sdk.exceptions import AirflowFailException

    sink = CdcSourceHook(cdc_conn_id=SINK_CONN_ID).get_config()
    keyspace = str(params.get("sink_keyspace") or sink.extra.get("sink_keyspace") or "")
    tables = str(params.get("tables") or sink.extra.get("replicated_tables") or "")
    if not keyspace or not tables:
        raise AirflowFailException(
            f"connection {SINK_CONN_ID}: set the extras sink_keyspace and replicated_tables "
            "(or the run's Params sink_keyspace and tables)"
        )
    return sink, keyspace, tables


@fail_fast
def replication_plan(params: Mapping[str, Any]) -> list[dict[str, str]]:
    """One mapped task per table: ``{"table": "ks.t"}``."""
    from cdcgen.core.cdc_log import TableRef

    _, _, tables = _sink(params)
    return [{"table": t.qualified} for t in TableRef.parse_list(tables)]


@fail_fast
def replicate_table(
    params: Mapping[str, Any],
    table: str,
    run_id: str,
    outlet_events: Any = None,
    alias: Any = None,
) -> dict[str, Any]:
    """Bootstrap the sink table if it is new, apply the lake's changes, emit its Asset
    event; fails (not retried) on a sink that must be re-bootstrapped, and after the
    event when a change was rejected."""
    from airflow.sdk.exceptions import AirflowFailException

    from cdcgen.adapters.cql import client_for
    from cdcgen.airflow.assets import replicated_table
    from cdcgen.core.replication_plan import ReplicationError
    from cdcgen.replication.run import Replication, replicate
    from cdcgen.replication.sink_schema import SinkSchemaError

    config = run_config(params)
    sink_config, keyspace, _ = _sink(params)
    job = Replication.of(table, sink_keyspace=keyspace)
    mode = str(params.get("mode") or "apply")
    try:
        with client_for(config) as source, client_for(sink_config) as sink:
            record = replicate(
                config, source, sink, job, run_id, bootstrap=mode, bootstrap_new=True
            )
    except (ReplicationError, SinkSchemaError) as exc:
        raise AirflowFailException(str(exc)) from exc
    if outlet_events is not None and alias is not None:
        keys = ("source_table", "sink_table", "consistent_until", "lag_seconds")
        extra = {k: record[k] for k in keys} | {"applied_log_rows": record["applied_log_rows"]}
        outlet_events[alias].add(replicated_table(job.sink.qualified), extra=extra)
    if record["rejected"]:
        raise AirflowFailException(
            f"{job.sink}: {len(record['rejected'])} change(s) not applied, recorded in "
            f"{job.sink.keyspace}.cdc_replication_rejects: "
            + "; ".join(f"{r['cdc_time']}: {r['reason']}" for r in record["rejected"][:5])
        )
    return record
