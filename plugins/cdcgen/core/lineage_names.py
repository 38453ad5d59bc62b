"""OpenLineage names of what the pipeline reads and writes, from typed values.

The OpenLineage naming spec (https://openlineage.io/docs/spec/naming) names a dataset by
its *namespace*, the data source as ``scheme://authority``, and its *name*, unique within
that source. A lineage backend joins the events of different producers (this pipeline, a
Spark job, a consumer's own DAG) on exactly these two strings, so they are built in one
place, here, and by the spec's rules rather than by each caller:

- **A ScyllaDB table.** The spec has no entry for ScyllaDB. ScyllaDB speaks Cassandra's
  protocol and organises its tables as Cassandra does (keyspace, table), so its tables
  take the spec's Cassandra convention: namespace ``cassandra://{host}:{port}``, name
  ``{keyspace}.{table}``. A consumer that names the same table with a Cassandra
  integration then meets the same dataset. The host is the *first* contact point the
  connection lists (lowercase; an IPv6 address in brackets, as a URI's authority writes
  it): a cluster has no single address, and the first contact point is the one its
  owner chose to name first, the same in every event of that connection.
- **A CDC log table** is the table ``<table>_scylla_cdc_log`` of the base table's
  keyspace, on the same cluster: a table like any other.
- **A lake table** (a Delta table: a folder) takes the spec's file-system conventions: a
  local folder is namespace ``file``, name its absolute path; an S3 location is namespace
  ``s3://{bucket}``, name its key (no leading slash).

Pure: the Airflow side (:mod:`cdcgen.airflow.lineage`) passes what it knows (a
connection's contact points and port, a keyspace and table, the lake's location and a
table's folder in it) and turns the names into OpenLineage's own objects.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from cdcgen.core.cdc_log import TableRef
from cdcgen.core.lake_uri import S3_SCHEME, lake_uri

#: The spec's scheme of a Cassandra data source, which ScyllaDB's tables take.
CASSANDRA_SCHEME = "cassandra"
#: The spec's namespace of a local file system.
FILE_NAMESPACE = "file"


@dataclass(frozen=True, order=True)
class DatasetName:
    """One dataset as OpenLineage names it."""

    namespace: str
    name: str

    def __post_init__(self) -> None:
        if not self.namespace or not self.name:
            raise ValueError(f"a dataset needs a namespace and a name: {self!r}")


def cluster_namespace(contact_points: Sequence[str], port: int) -> str:
    """``cassandra://{host}:{port}`` of a cluster reached through ``contact_points``."""
    hosts = [point.strip() for point in contact_points if point.strip()]
    if not hosts:
        raise ValueError("a cluster's namespace needs at least one contact point")
    if not 1 <= int(port) <= 65535:
        raise ValueError(f"port {port}: not a TCP port")
    host = hosts[0].lower()
    if ":" in host and not host.startswith("["):  # an IPv6 address
        host = f"[{host}]"
    return f"{CASSANDRA_SCHEME}://{host}:{int(port)}"


def table_dataset(contact_points: Sequence[str], port: int, table: TableRef | str) -> DatasetName:
    """A table (``keyspace.table`` or a :class:`TableRef`) of a cluster."""
    ref = table if isinstance(table, TableRef) else TableRef.parse(table)
    return DatasetName(cluster_namespace(contact_points, port), ref.qualified)


def log_table_dataset(
    contact_points: Sequence[str], port: int, table: TableRef | str
) -> DatasetName:
    """The CDC log table of the base ``table`` (``keyspace.table``), on the same cluster."""
    ref = table if isinstance(table, TableRef) else TableRef.parse(table)
    return DatasetName(cluster_namespace(contact_points, port), ref.qualified_log)


def lake_dataset(location: str, *folders: str) -> DatasetName:
    """The lake table at ``location`` (an absolute folder or ``s3://bucket/prefix``, the
    lake's root) joined with ``folders`` (the table's folders under it)."""
    parts = [part.strip("/") for part in folders if part.strip("/")]
    uri = lake_uri("/".join([lake_uri(location), *parts]))
    if uri.startswith(S3_SCHEME):
        bucket, _, key = uri[len(S3_SCHEME) :].partition("/")
        if not key:
            raise ValueError(f"{uri}: a lake table is a folder inside the bucket, not the bucket")
        return DatasetName(f"{S3_SCHEME}{bucket}", key)
    return DatasetName(FILE_NAMESPACE, uri)
