"""Connection ids and the JSON form of the connections this project defines.

Kept apart from the hook so the Airflow home, the DAG file and the tests can
name connections without importing anything heavy.  Connections are given to
Airflow as ``AIRFLOW_CONN_<ID>`` environment variables in JSON form: no
metadata-database rows to create, and a missing Spark connection cannot
silently fall back to YARN (which SparkSubmitHook does when the id is unknown).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Required, TypedDict

if TYPE_CHECKING:
    from cdcgen.config import PipelineConfig

#: The CQL cluster whose generations are followed (type cassandra).
SOURCE_CONN_ID = "cdc_source"
#: The cluster the cdc_replication DAG writes to (type cassandra; extras ``sink_keyspace``
#: and ``replicated_tables``, plus the access settings a source connection takes).
SINK_CONN_ID = "cdcgen_sink"
#: The Spark master for the extract job (type spark, host ``local[2]`` by default).
SPARK_CONN_ID = "cdcgen_spark"

#: Where the DAGs' notifier posts its alerts (type http; optional: unset, the task log
#: alone; :mod:`cdcgen.airflow.alerts`).
ALERTS_CONN_ID = "cdcgen_alerts"

DEFAULT_SPARK_MASTER = "local[2]"


@dataclass(frozen=True)
class ClusterConnections:
    """The connections one set of DAGs works with (:mod:`cdcgen.airflow.dag_factories`): the source
    cluster, whose id also names its Assets, the Spark master, the replication sink,
    whose id names the sink tables' Assets, and the webhook the alerts go to. Another
    cluster's DAGs take their own."""

    source: str = SOURCE_CONN_ID
    spark: str = SPARK_CONN_ID
    sink: str = SINK_CONN_ID
    alerts: str = ALERTS_CONN_ID


#: The default DAGs' (``dags/``).
DEFAULT_CONNECTIONS = ClusterConnections()

#: Connection extras passed through as ``PipelineConfig.extra`` (adapter-specific options).
#: Each with what it means (the configuration reference prints it).
PASS_THROUGH_EXTRAS: dict[str, str] = {
    "cdc_tables": "The tables whose changes are extracted (comma-separated "
    "`keyspace.table`; a run's `tables` Param narrows them); unset, every CDC-enabled "
    "table. In tablets mode, also the tables whose stream sets are followed.",
    "sink_keyspace": "On `cdcgen_sink`: the keyspaces replication may write to "
    "(comma-separated; the first unless a run's Param names another).",
    "replicated_tables": "On `cdcgen_sink`: the tables replication may replicate "
    "(comma-separated `keyspace.table`; a run's `tables` Param narrows them).",
}


#: A connection extra's value, as the JSON of a connection holds it.
ExtraValue = str | int | float | bool


class AirflowConnection(TypedDict, total=False):
    """A connection in the JSON form Airflow reads from ``AIRFLOW_CONN_<ID>``."""

    conn_type: Required[str]
    host: str
    port: int
    login: str
    password: str
    extra: dict[str, ExtraValue]


def env_var_name(conn_id: str) -> str:
    """``AIRFLOW_CONN_<ID>``, Airflow's environment-variable form of a connection id."""
    return f"AIRFLOW_CONN_{conn_id.upper()}"


def spark_connection(master: str = DEFAULT_SPARK_MASTER) -> AirflowConnection:
    """A ``spark`` connection whose host is the whole master URL (``local[2]``, ``spark://h:7077``).

    SparkSubmitHook uses ``host`` as the master when the type is ``spark`` and there is
    no port, which is what a ``local[N]`` master needs.
    """
    return {"conn_type": "spark", "host": master}


def source_connection(
    contact_points: Sequence[str] = ("127.0.0.1",),
    port: int = 9042,
    extra: Mapping[str, ExtraValue] | None = None,
    *,
    login: str | None = None,
    password: str | None = None,
) -> AirflowConnection:
    """A ``cassandra`` connection: comma-separated hosts, port, cdcgen settings as extras.

    ``extra`` keys are the lower-case names of ``CDCGEN_*`` settings (``source_mode``,
    ``source_keyspace_prefix``, ``clock_source``, ...); :class:`CdcSourceHook` checks them.
    """
    connection = AirflowConnection(conn_type="cassandra", host=",".join(contact_points), port=port)
    if login is not None:
        connection["login"] = login
    if password is not None:
        connection["password"] = password
    if extra:
        connection["extra"] = dict(extra)
    return connection


def source_connection_for(config: PipelineConfig, **extra: ExtraValue) -> AirflowConnection:
    """The ``cdc_source`` connection describing ``config``'s source cluster, plus ``extra``.

    What the demo and the tests hand to ``airflow dags test`` or a stack: the source's
    hosts, how it stores generations, how to read its clocks, its ring delay.
    """
    from cdcgen.adapters.cluster_access import access_for

    settings: dict[str, ExtraValue] = {
        "source_mode": str(config.source_mode),
        "source_keyspace_prefix": config.source_keyspace_prefix,
        "clock_source": config.clock_source,
        "ring_delay_seconds": config.ring_delay.total_seconds(),
    }
    if config.protocol_version is not None:
        settings["protocol_version"] = config.protocol_version
    tls = config.access
    if tls.uses_tls:
        files = {"tls_ca_file": tls.tls_ca_file, "tls_cert_file": tls.tls_cert_file}
        files["tls_key_file"] = tls.tls_key_file
        settings |= {name: str(path) for name, path in files.items() if path is not None}
        settings |= {"tls": True, "tls_verify_hostname": tls.tls_verify_hostname}
    access = access_for(config)
    return source_connection(
        config.contact_points,
        config.port,
        {**settings, **extra},
        login=access.username,
        password=access.password.get_secret_value() if access.password else None,
    )


def connection_env(conn_id: str, connection: AirflowConnection) -> dict[str, str]:
    """The one environment variable that defines ``conn_id``."""
    return {env_var_name(conn_id): json.dumps(dict(connection), sort_keys=True)}
