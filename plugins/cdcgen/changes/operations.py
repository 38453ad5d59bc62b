"""Names of ``cdc$operation`` codes, so the lake is readable without ScyllaDB's docs.

The codes are ScyllaDB's ``cdc::operation`` (``cdc/log.hh``); a code outside the list
decodes to ``unknown(<n>)`` rather than failing the extraction, and the row checks
count those rows.
"""

from __future__ import annotations

from collections.abc import Iterable
from enum import IntEnum


class Operation(IntEnum):
    PRE_IMAGE = 0
    UPDATE = 1
    INSERT = 2
    ROW_DELETE = 3
    PARTITION_DELETE = 4
    RANGE_DELETE_START_INCLUSIVE = 5
    RANGE_DELETE_START_EXCLUSIVE = 6
    RANGE_DELETE_END_INCLUSIVE = 7
    RANGE_DELETE_END_EXCLUSIVE = 8
    POST_IMAGE = 9

    @property
    def label(self) -> str:
        """Lower-case, space-free name stored in the lake (``range_delete_start_inclusive``)."""
        return self.name.lower()


OPERATION_NAMES: dict[int, str] = {op.value: op.label for op in Operation}


def operation_name(code: int | None) -> str | None:
    """The name of one code; ``None`` stays ``None`` (a log row always has a code)."""
    if code is None:
        return None
    return OPERATION_NAMES.get(code, f"unknown({code})")


def operation_names(codes: Iterable[int | None]) -> list[str | None]:
    return [operation_name(code) for code in codes]
