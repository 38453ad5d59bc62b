"""Maintenance of the published tables: the V1 -> V2 rewrite and expiring superseded generations.

Both need every CDC table's TTL and creation time (:class:`~cdcgen.adapters.cdc_tables.CdcCatalog`):
a generation may be skipped (rewrite) or marked ``expired`` only once no CDC table can
still hold rows written to it. :mod:`cdcgen.adapters.v1_rewrite` and
:mod:`cdcgen.adapters.expiry` implement the two procedures; this module turns their
outcome into JSON for XCom and logs.
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime
from typing import Any

from cdcgen.config import PipelineConfig
from cdcgen.core.generation import SourceMode

log = logging.getLogger(__name__)


def rewrite_v1(config: PipelineConfig) -> dict[str, Any]:
    """ScyllaDB 4.3 -> 4.4: copy live V1 generations to the V2 tables, then mark ``rewritten``.

    Only for a V1 source; other modes have nothing to rewrite.
    """
    from cdcgen.adapters.cdc_tables import CdcCatalog
    from cdcgen.adapters.cql import client_for
    from cdcgen.adapters.publisher import CqlDescriptionPublisher
    from cdcgen.adapters.v1_rewrite import rewrite_v1 as run_rewrite

    if config.source_mode != SourceMode.V1:
        return {"status": f"skipped: the source is in {config.source_mode} mode, not v1"}
    with client_for(config) as client:
        tables = CdcCatalog(client, config.source_schema).tables()
        publisher = CqlDescriptionPublisher(client, config)
        report = run_rewrite(client, config.source_schema, publisher, tables, datetime.now(UTC))
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
    from cdcgen.adapters.cdc_tables import CdcCatalog
    from cdcgen.adapters.cql import client_for
    from cdcgen.adapters.expiry import expire_superseded as mark_expired
    from cdcgen.adapters.publisher import CqlDescriptionPublisher

    with client_for(config) as client:
        tables = CdcCatalog(client, config.source_schema).tables()
        marked = mark_expired(CqlDescriptionPublisher(client, config), tables)
    result = {
        "cdc_tables": len(tables),
        "expired": {e.timestamp.isoformat(): e.expired.isoformat() for e in marked},
    }
    log.info("expired %d superseded generation(s): %s", len(marked), result["expired"])
    return result
