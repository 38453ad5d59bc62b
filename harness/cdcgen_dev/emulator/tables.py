"""Create a CDC-enabled base table with its log table, and remember its CDC options.

On ScyllaDB ``WITH cdc = {'enabled': true, 'ttl': N}`` creates the log table, records
the CDC options as the base table's ``cdc`` schema extension (``system_schema.tables``
``extensions``, :mod:`cdcgen.core.cdc_extension`) and the log's partitioner in
``system_schema.scylla_tables``, and (for a tablets keyspace) opens the first stream
set. Here the emulator does the same itself: the table's user types, the base table,
``<table>_scylla_cdc_log`` with ScyllaDB's exact schema
(:mod:`cdcgen_dev.emulator.log_schema`), the ``tables`` and ``scylla_tables`` rows
under the sandbox's prefix (read by the pipeline exactly as on ScyllaDB; Cassandra keeps
no foreign extension in its own ``system_schema.tables``), and its own record in
``sandbox_cdc_tables`` (the table's definition, for the workload).

One row differs from ScyllaDB on purpose: the log table's ``partitioner`` says Murmur3,
because Apache Cassandra really hashes the log's partitions (ScyllaDB's CDC partitioner
takes the token from the stream ID). The pipeline routes reads by what that row says.
"""

from __future__ import annotations

import json
import random
import uuid
from dataclasses import asdict
from datetime import datetime
from typing import Any

from cdcgen.core.cdc_extension import CDC_EXTENSION, encode_cdc_extension
from cdcgen.core.cdc_log import MURMUR3_PARTITIONER
from cdcgen.schema import Table
from cdcgen_dev.emulator.cluster import SandboxCluster
from cdcgen_dev.emulator.cql_util import execute
from cdcgen_dev.emulator.log_schema import (
    BaseTableSpec,
    Column,
    Field,
    UserType,
    base_table_cql,
    log_table_cql,
    user_type_cql,
)
from cdcgen_dev.emulator.schema_setup import create_keyspace, ddl
from cdcgen_dev.emulator.state import (
    CdcTableRecord,
    EmulatorError,
    load_cdc_table,
    save_cdc_table,
)
from cdcgen_dev.emulator.tablet_map import log2_tablets
from cdcgen_dev.emulator.tablets import log_table_id, start_tablet_streams


def spec_to_json(spec: BaseTableSpec) -> str:
    return json.dumps(asdict(spec))


def spec_from_json(text: str) -> BaseTableSpec:
    """The spec :func:`spec_to_json` wrote; records written before static columns, user
    types and image options existed have none."""
    data: dict[str, Any] = json.loads(text)

    def columns(key: str) -> tuple[Column, ...]:
        return tuple(
            Column(c["name"], c["cql_type"], bool(c.get("static", False))) for c in data[key]
        )

    user_types = tuple(
        UserType(t["name"], tuple(Field(f["name"], f["cql_type"]) for f in t["fields"]))
        for t in data.get("user_types", ())
    )
    return BaseTableSpec(
        keyspace=data["keyspace"],
        table=data["table"],
        partition_key=columns("partition_key"),
        clustering_key=columns("clustering_key"),
        columns=columns("columns"),
        cdc_ttl=int(data["cdc_ttl"]),
        user_types=user_types,
        preimage=bool(data.get("preimage", False)),
        postimage=bool(data.get("postimage", False)),
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
    for statement in user_type_cql(spec):  # before the table that uses them
        ddl(cluster.client, statement)
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
    record_cdc_options(cluster, spec)
    if record.tablet_count is not None:
        start_tablet_streams(cluster, record, random.Random(seed), now)
    return record


def record_cdc_options(cluster: SandboxCluster, spec: BaseTableSpec) -> None:
    """The base table's CDC options (its ``cdc`` extension, as ScyllaDB serializes it) and
    the log table's partitioner, under the sandbox's prefix. ``scylla_tables.cdc`` stays
    empty, as ScyllaDB has left it since 4.0."""
    options = {
        "enabled": "true",
        "ttl": str(spec.cdc_ttl),
        "preimage": str(spec.preimage).lower(),
        "postimage": str(spec.postimage).lower(),
        "delta": "full",
    }
    execute(
        cluster.client,
        f"INSERT INTO {cluster.schema.name(Table.TABLES)} "
        "(keyspace_name, table_name, id, extensions) VALUES (?, ?, ?, ?)",
        (
            spec.keyspace,
            spec.table,
            log_table_id(cluster.client, spec.keyspace, spec.table),
            {CDC_EXTENSION: encode_cdc_extension(options)},
        ),
    )
    scylla_tables = cluster.schema.name(Table.SCYLLA_TABLES)
    execute(
        cluster.client,
        f"INSERT INTO {scylla_tables} (keyspace_name, table_name, version) VALUES (?, ?, ?)",
        (spec.keyspace, spec.table, uuid.uuid1()),
    )
    execute(
        cluster.client,
        f"INSERT INTO {scylla_tables} (keyspace_name, table_name, version, partitioner) "
        "VALUES (?, ?, ?, ?)",
        (spec.keyspace, spec.log_table, uuid.uuid1(), MURMUR3_PARTITIONER),
    )


def table_spec(cluster: SandboxCluster, keyspace: str, table: str) -> BaseTableSpec:
    """The recorded definition of a sandbox CDC table."""
    return spec_from_json(load_cdc_table(cluster.client, cluster.schema, keyspace, table).spec_json)
