"""The 4.3 -> 4.4 rewrite as an upgraded ScyllaDB node runs it on restart.

A node copies the V1 stream descriptions that may still hold data into its own
``system_distributed`` V2 tables and writes the ``rewritten`` marker: the product's one
implementation of ScyllaDB's procedure (:mod:`cdcgen.adapters.v1_rewrite`), pointed at the
emulator's copies of those tables, with the CDC tables the emulated catalog lists.
"""

from __future__ import annotations

from datetime import datetime

from cdcgen.adapters.cdc_tables import CdcCatalog
from cdcgen.adapters.publisher import CqlDescriptionPublisher
from cdcgen.adapters.v1_rewrite import RewriteReport, is_rewritten, write_marker
from cdcgen.adapters.v1_rewrite import rewrite_v1 as run_rewrite
from cdcgen.schema import Table
from cdcgen_dev.emulator.cluster import SandboxCluster, utc_now


def rewrite_v1(
    cluster: SandboxCluster, *, now: datetime | None = None, marker_only: bool = False
) -> RewriteReport:
    """Run the rewrite in the emulated cluster (``marker_only``: a node that skips copying
    and only writes the marker, as after ``dont_rewrite_streams`` and a manual copy)."""
    client, schema = cluster.client, cluster.schema
    if not client.table_exists(schema.name(Table.CDC_STREAMS_DESCRIPTIONS_V1)):
        return RewriteReport("no V1 streams table: nothing to rewrite")
    cluster.setup(legacy_v1=True)
    if marker_only:
        if is_rewritten(client, schema):
            return RewriteReport("already rewritten")
        write_marker(client, schema, None)
        return RewriteReport("marker only", marker_written=True)
    own_tables = CqlDescriptionPublisher(
        client, keyspace=schema.keyspace(Table.CDC_STREAMS_DESCRIPTIONS_V2)
    )
    tables = CdcCatalog(client, schema).tables()
    return run_rewrite(client, schema, own_tables, tables, utc_now() if now is None else now)
