"""A table's CDC options as ScyllaDB stores them: the ``cdc`` schema extension.

Since ScyllaDB 4.0 a table's CDC options (``enabled``, ``ttl``, ``preimage``, ...) are
not kept in the ``cdc`` column of ``system_schema.scylla_tables`` (ScyllaDB writes that
cell dead on every schema change, ``db/schema_tables.cc`` ``make_scylla_tables_mutation``)
but as a schema extension: ``system_schema.tables.extensions['cdc']``, a blob holding
``cdc::options::to_map()`` serialized by ScyllaDB's IDL serializer
(``cdc/cdc_extension.hh``): a little-endian ``uint32`` count of entries, then for each
key and each value a little-endian ``uint32`` length and the UTF-8 bytes. A table on
which CDC was never enabled has no ``cdc`` key (or an empty map).
"""

from __future__ import annotations

import struct
from collections.abc import Mapping

from cdcgen.core.errors import BadCdcExtension

#: The key of the CDC options in ``system_schema.tables.extensions``.
CDC_EXTENSION = "cdc"
_U32 = struct.Struct("<I")


def encode_cdc_extension(options: Mapping[str, str]) -> bytes:
    """The blob ScyllaDB stores for ``options`` (its ``std::map`` iterates sorted keys)."""
    parts = [_U32.pack(len(options))]
    for key in sorted(options):
        for text in (key, options[key]):
            raw = text.encode()
            parts += [_U32.pack(len(raw)), raw]
    return b"".join(parts)


def decode_cdc_extension(blob: bytes | None) -> dict[str, str]:
    """The options in a ``cdc`` extension blob; ``{}`` for none."""
    if not blob:
        return {}
    data = bytes(blob)
    try:
        (count,) = _U32.unpack_from(data, 0)
        offset, options = _U32.size, {}
        for _ in range(count):
            key, offset = _string(data, offset)
            value, offset = _string(data, offset)
            options[key] = value
    except (struct.error, UnicodeDecodeError) as exc:
        raise BadCdcExtension(f"not a serialized CDC options map: {exc}") from None
    if offset != len(data):
        raise BadCdcExtension(f"{len(data) - offset} bytes left after the CDC options map")
    return options


def _string(data: bytes, offset: int) -> tuple[str, int]:
    (size,) = _U32.unpack_from(data, offset)
    start = offset + _U32.size
    if start + size > len(data):
        raise struct.error(f"a string of {size} bytes runs past the end")
    return data[start : start + size].decode(), start + size


def cdc_options_of(extensions: Mapping[str, bytes] | None) -> dict[str, str]:
    """The CDC options in a ``system_schema.tables.extensions`` map."""
    return decode_cdc_extension((extensions or {}).get(CDC_EXTENSION))
