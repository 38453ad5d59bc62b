"""ScyllaDB's CDC on writes a replicator applied: their log rows in the sink's own log.

On ScyllaDB every write to a CDC table is logged, the replicator's too, in the same
mutation. The sandbox's Cassandra logs nothing by itself (the emulator writes log rows
beside each workload write), so a sink that is itself a CDC table (active-active) gets
the log rows of what was applied to it from here: the same rows the source logged
(operation, key, values, deleted markers, TTL), at the same write time, in the stream the
sink's coordinator picks for that time and key, with a ``cdc$time`` of the sink's own.
A write ScyllaDB would refuse (``cdc/metadata.cc``: from the past, across a generation
switch) raises here, as the base write would have failed there.

It runs right after the replicator's writes are acknowledged, not in their mutation:
the tests that use it read the sink's log only once the apply has returned.
"""

from __future__ import annotations

import random
from datetime import UTC, datetime
from itertools import groupby
from typing import TYPE_CHECKING

from cdcgen.changes.codec import driver_value
from cdcgen.core.cdc_log import STREAM_ID, TIME, quote_column, timeuuid_from_micros
from cdcgen.core.change_batch import WRITE_TIME
from cdcgen.core.time import to_micros
from cdcgen.replication.apply import AppliedHook
from cdcgen_dev.emulator.cluster import SandboxCluster
from cdcgen_dev.emulator.cql_util import prepared
from cdcgen_dev.emulator.log_rows import log_insert_cql, log_insert_params
from cdcgen_dev.emulator.partition import partition_token
from cdcgen_dev.emulator.state import load_cdc_table
from cdcgen_dev.emulator.tables import spec_from_json
from cdcgen_dev.emulator.workload import make_router

if TYPE_CHECKING:
    import pyarrow as pa

#: Lake columns that are not log columns.
_NOT_LOGGED = frozenset({WRITE_TIME, STREAM_ID, TIME})


def capture_into(cluster: SandboxCluster, keyspace: str, table: str, seed: int = 0
                 ) -> AppliedHook:  # fmt: skip
    """A hook for :class:`cdcgen.replication.apply.SinkApplier` (``on_applied``) that
    logs applied changes in ``keyspace.table``'s log, as ScyllaDB would."""
    from cassandra.query import UNSET_VALUE

    record = load_cdc_table(cluster.client, cluster.schema, keyspace, table)
    spec = spec_from_json(record.spec_json)
    cql, names = log_insert_cql(spec)
    statement = prepared(cluster.client, cql)
    logged = set(names)
    # The lake's values back as the driver binds them, by each log column's type.
    types = {column[2]: column[3] for column in statement.column_metadata}
    pk_names = [c.name for c in spec.partition_key]
    pk_types = [c.cql_type for c in spec.partition_key]
    rng = random.Random(seed)

    def capture(applied: pa.Table) -> None:
        router = make_router(cluster, keyspace, table)
        now = datetime.now(UTC)
        rows = applied.to_pylist()
        batches = groupby(rows, key=lambda r: (r[STREAM_ID], r[WRITE_TIME], r[TIME]))
        for (_, written, _), batch in batches:
            changes = list(batch)
            key = [changes[0][name] for name in pk_names]
            _, stream = router.route(written, partition_token(pk_types, key), now)
            micros = to_micros(written)
            time_uuid = timeuuid_from_micros(micros, rng)
            for change in changes:
                row = {
                    (quote_column(k) if "$" in k else k): driver_value(types[k], v)
                    for k, v in change.items()
                    if k not in _NOT_LOGGED and k in types and v is not None
                }
                row = {k: v for k, v in row.items() if k in logged}
                params = log_insert_params(
                    names, row, stream.raw, time_uuid, micros, record.cdc_ttl, UNSET_VALUE
                )
                cluster.client.session.execute(statement, params)

    return capture
