"""Maintenance of the published tables: the V1 -> V2 rewrite and expiring superseded generations.

Both need every CDC table's TTL: a generation may be skipped (rewrite) or marked
``expired`` only once no CDC table can still hold rows written to it.  The
publisher (:mod:`cdcgen.adapters.publisher`) implements the two procedures; this
module finds the CDC tables and turns the outcome into JSON for XCom and logs.
"""

from __future__ import annotations

import logging
from typing import Any

from cdcgen.config import PipelineConfig
from cdcgen.ports import SourceMode

log = logging.getLogger(__name__)


def cdc_tables(client: Any, config: PipelineConfig) -> list[Any]:
    """Every CDC-enabled table with its TTL, as :class:`publication_rules.CdcTable`.

    A real ScyllaDB keeps the ``cdc`` options in ``system_schema.scylla_tables``; the
    sandbox (a keyspace prefix) records its CDC tables in the emulator's state.
    """
    from cdcgen.adapters.publication_rules import CdcTable

    if config.source_keyspace_prefix:
        from cdcgen.sandbox.emulator.state import load_cdc_tables

        return [
            CdcTable(f"{t.keyspace}.{t.table}", int(t.cdc_ttl))
            for t in load_cdc_tables(client, config.source_schema)
        ]
    rows = client.execute("SELECT keyspace_name, table_name, cdc FROM system_schema.scylla_tables")
    tables = []
    for keyspace, table, options in rows:
        options = dict(options or {})
        if str(options.get("enabled", "false")).lower() == "true":
            tables.append(CdcTable(f"{keyspace}.{table}", int(options.get("ttl", 86400))))
    return tables


def rewrite_v1(config: PipelineConfig) -> dict[str, Any]:
    """ScyllaDB 4.3 -> 4.4: copy live V1 generations to the V2 tables, then mark ``rewritten``.

    Only for a V1 source; other modes have nothing to rewrite.
    """
    from cdcgen.adapters.cql import client_for
    from cdcgen.adapters.publisher import CqlDescriptionPublisher

    if config.source_mode != SourceMode.V1:
        return {"status": f"skipped: the source is in {config.source_mode} mode, not v1"}
    with client_for(config) as client:
        tables = cdc_tables(client, config)
        report = CqlDescriptionPublisher(client, config).rewrite_v1(tables)
    result = {
        "status": report.status,
        "cdc_tables": len(tables),
        "rewritten": [t.isoformat() for t in report.rewritten],
        "too_old": [t.isoformat() for t in report.too_old],
        "already_present": [t.isoformat() for t in report.already_present],
        "missing_description": [t.isoformat() for t in report.missing_description],
        "marker_written": report.marker_written,
    }
    log.info("V1 -> V2 rewrite: %s", result)
    return result


def expire_superseded(config: PipelineConfig) -> dict[str, Any]:
    """Set ``expired`` on superseded generations older than every CDC table's TTL."""
    from cdcgen.adapters.cql import client_for
    from cdcgen.adapters.publisher import CqlDescriptionPublisher

    with client_for(config) as client:
        tables = cdc_tables(client, config)
        marked = CqlDescriptionPublisher(client, config).expire_superseded(tables)
    result = {
        "cdc_tables": len(tables),
        "expired": {e.timestamp.isoformat(): e.expired.isoformat() for e in marked},
    }
    log.info("expired %d superseded generation(s): %s", len(marked), result["expired"])
    return result
