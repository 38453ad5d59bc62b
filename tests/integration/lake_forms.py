"""What the changes lake holds for a value the driver reads from a log table.

The README's mapping, restated independently of the pipeline's own conversion, for the
tests that compare the lake with a raw scan of the log.
"""

from __future__ import annotations

from datetime import UTC
from typing import Any

from cdcgen.adapters.cql import CqlClient
from cdcgen.core.cdc_log import BATCH_SEQ_NO, STREAM_ID, TIME, TableRef

LogKey = tuple[bytes, str, int]  # (stream, cdc$time as text, batch_seq_no): the lake's key


def lake_form(cqltype: Any, value: Any) -> Any:
    """The README's mapping, restated: what the lake holds for a driver value. A user
    type's fields are read from the driver's value by name, so the struct's fields must
    be the type's, in its order."""
    if value is None:
        return None
    name = cqltype.typename
    field_names = getattr(cqltype, "fieldnames", None)
    if field_names is not None:
        return {
            field: lake_form(sub, getattr(value, field))
            for field, sub in zip(field_names, cqltype.subtypes, strict=True)
        }
    if name == "tuple":
        parts = zip(cqltype.subtypes, value, strict=True)
        return {f"f{n}": lake_form(sub, v) for n, (sub, v) in enumerate(parts)}
    if name == "duration":
        return {"months": value.months, "days": value.days, "nanoseconds": value.nanoseconds}
    if name in ("list", "set"):
        return [lake_form(cqltype.subtypes[0], v) for v in value]
    if name == "map":
        key, item = cqltype.subtypes
        return [(lake_form(key, k), lake_form(item, v)) for k, v in value.items()]
    if name in ("uuid", "timeuuid", "inet", "decimal", "varint"):
        return str(value)
    if name == "date":
        return value.date()
    if name == "time":
        return value.nanosecond_time
    if name == "timestamp":
        return value.replace(tzinfo=UTC)
    return value


def scan_log(client: CqlClient, table: TableRef) -> tuple[dict[LogKey, dict[str, Any]], Any]:
    """Every row of ``table``'s log by its lake key, and the columns' driver types (a full
    scan, which only a test may do: the pipeline reads stream by stream)."""
    result = client.session.execute(f"SELECT * FROM {table.qualified_log}", timeout=60)
    names = result.column_names
    types = dict(zip(names, result.column_types, strict=True))
    rows: dict[LogKey, dict[str, Any]] = {}
    for values in result:
        row = dict(zip(names, values, strict=True))
        rows[(bytes(row[STREAM_ID]), str(row[TIME]), row[BATCH_SEQ_NO])] = row
    return rows, types
