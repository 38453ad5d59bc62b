"""A log row's key, and whether it is a static row's change."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from cdcgen.core.change_batch import ChangeBatch
from cdcgen.core.operations.errors import ReplayError
from cdcgen.core.operations.table import TableShape


def is_static_row(table: TableShape, batch: ChangeBatch, row: int) -> bool:
    """A static row's change: the table has a clustering key, the log row none."""
    keys = table.clustering_key
    return bool(keys) and all(batch.value(name, row) is None for name in keys)


def key_of(table: TableShape, names: Sequence[str], batch: ChangeBatch, row: int
           ) -> tuple[Any, ...]:  # fmt: skip
    """The values of key columns ``names``; a change that lacks one is refused by name."""
    key = batch.key(names, row)
    if None in key:
        missing = [n for n, v in zip(names, key, strict=True) if v is None]
        raise ReplayError(
            f"{table.name}: key column(s) {', '.join(missing)} missing from a change that "
            "needs them"
        )
    return key
