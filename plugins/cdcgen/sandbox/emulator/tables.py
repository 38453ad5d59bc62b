"""Create a CDC-enabled base table with its log table, and remember its CDC options.

On ScyllaDB ``WITH cdc = {'enabled': true, 'ttl': N}`` creates the log table and (for a
tablets keyspace) the first stream set. Here the emulator does the same three things
itself: base table, ``<table>_scylla_cdc_log`` with ScyllaDB's exact schema
(:mod:`cdcgen.sandbox.emulator.log_schema`), and its record in ``sandbox_cdc_tables``
(the TTL the workload writes log rows with; the V1 rewrite's "too old" rule reads it).
"""

from __future__ import annotations

import json
import random
from dataclasses import asdict
from datetime import datetime
from typing import Any

from cdcgen.sandbox.emulator.cluster import SandboxCluster
from cdcgen.sandbox.emulator.log_schema import (
    BaseTableSpec,
    Column,
    base_table_cql,
    log_table_cql,
)
from cdcgen.sandbox.emulator.schema_setup import create_keyspace, ddl
from cdcgen.sandbox.emulator.state import (
    CdcTableRecord,
    EmulatorError,
    load_cdc_table,
    save_cdc_table,
)
from cdcgen.sandbox.emulator.tablet_map import log2_tablets
from cdcgen.sandbox.emulator.tablets import log_table_id, start_tablet_streams


def spec_to_json(spec: BaseTableSpec) -> str:
    return json.dumps(asdict(spec))


def spec_from_json(text: str) -> BaseTableSpec:
    data: dict[str, Any] = json.loads(text)

    def columns(key: str) -> tuple[Column, ...]:
        return tuple(Column(c["name"], c["cql_type"]) for c in data[key])

    return BaseTableSpec(
        keyspace=data["keyspace"],
        table=data["table"],
        partition_key=columns("partition_key"),
        clustering_key=columns("clustering_key"),
        columns=columns("columns"),
        cdc_ttl=int(data["cdc_ttl"]),
    )


def create_cdc_table(
    cluster: SandboxCluster,
    spec: BaseTableSpec,
    *,
    tablets: int | None = None,
    seed: int | None = None,
    now: datetime | None = None,
) -> CdcTableRecord:
    """Create base + log table (idempotent) and, with ``tablets``, the first stream set.

    ``tablets`` is the initial tablet count (a power of two); None means a vnodes
    keyspace, whose writes follow the cluster's generations.
    """
    if tablets is not None:
        log2_tablets(tablets)
    cluster.setup()
    create_keyspace(cluster.client, spec.keyspace)
    ddl(cluster.client, base_table_cql(spec))
    ddl(cluster.client, log_table_cql(spec))
    try:
        existing: CdcTableRecord | None = load_cdc_table(
            cluster.client, cluster.schema, spec.keyspace, spec.table
        )
    except EmulatorError:  # not recorded yet
        existing = None
    record = CdcTableRecord(
        keyspace=spec.keyspace,
        table=spec.table,
        spec_json=spec_to_json(spec),
        cdc_ttl=spec.cdc_ttl,
        log_table_id=log_table_id(cluster.client, spec.keyspace, spec.log_table),
        tablet_count=(existing.tablet_count if existing and existing.tablet_count else tablets),
    )
    save_cdc_table(cluster.client, cluster.schema, record)
    if record.tablet_count is not None:
        start_tablet_streams(cluster, record, random.Random(seed), now)
    return record


def table_spec(cluster: SandboxCluster, keyspace: str, table: str) -> BaseTableSpec:
    """The recorded definition of a sandbox CDC table."""
    return spec_from_json(load_cdc_table(cluster.client, cluster.schema, keyspace, table).spec_json)
