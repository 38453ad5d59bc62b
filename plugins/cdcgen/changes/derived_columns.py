"""Columns the lake derives from a batch of log rows, each computed once per batch.

``cdc$time`` as text, ``operation_name`` and the ``date`` partition value are per-row
functions of one column; computing them value by value in Python cost more per row than
reading the row (a profile of the range task), so each is built from the whole column:
distinct values decoded once, or the text written into one buffer.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from cdcgen.core.cdc_log import operation_name

if TYPE_CHECKING:
    import pyarrow as pa

MICROS_PER_DAY = 86_400_000_000


def day_label(micros: int) -> str:
    """``YYYY-MM-DD`` (UTC) of a microsecond timestamp."""
    return datetime.fromtimestamp(micros // MICROS_PER_DAY * 86_400, tz=UTC).strftime("%Y-%m-%d")


def day_labels(micros: pa.Int64Array) -> pa.Array:
    """:func:`day_label` of every value, computed once per distinct day."""
    import numpy as np
    import pyarrow as pa

    days = micros.to_numpy(zero_copy_only=False) // MICROS_PER_DAY
    distinct, inverse = np.unique(days, return_inverse=True)
    labels = pa.array([day_label(int(d) * MICROS_PER_DAY) for d in distinct], pa.string())
    return labels.take(pa.array(inverse.astype(np.int64)))


_HEX_DIGITS = b"0123456789abcdef"
#: (first digit, first character, digits) of each dash-separated group of a UUID's text.
_UUID_GROUPS = ((0, 0, 8), (8, 9, 4), (12, 14, 4), (16, 19, 4), (20, 24, 12))


def timeuuid_texts(times: Any) -> pa.Array:
    """Each UUID of ``times`` (``uint8[n, 16]``) in its canonical text form, as
    ``str(UUID)`` writes it (8-4-4-4-12 lowercase hex digits), built as one buffer."""
    import numpy as np
    import pyarrow as pa

    count = len(times)
    hex_digits = np.frombuffer(_HEX_DIGITS, np.uint8)
    digits = np.empty((count, 32), np.uint8)
    digits[:, 0::2] = hex_digits[times >> 4]
    digits[:, 1::2] = hex_digits[times & 15]
    text = np.full((count, 36), ord("-"), np.uint8)
    for source, target, width in _UUID_GROUPS:
        text[:, target : target + width] = digits[:, source : source + width]
    offsets = np.arange(0, 36 * count + 1, 36, dtype=np.int32)
    buffers = [None, pa.py_buffer(offsets), pa.py_buffer(text)]
    return pa.Array.from_buffers(pa.string(), count, buffers)


def operation_names(codes: Sequence[int | None]) -> pa.Array:
    """:func:`~cdcgen.core.cdc_log.operation_name` of every code, decoded once per
    distinct code."""
    import pyarrow as pa
    import pyarrow.compute as pc

    distinct = [code for code in set(codes) if code is not None]
    names = pa.array([operation_name(code) for code in distinct], pa.string())
    where = pc.index_in(pa.array(codes, pa.int64()), value_set=pa.array(distinct, pa.int64()))
    return names.take(where)
