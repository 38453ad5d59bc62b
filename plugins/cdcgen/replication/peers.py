"""Active-active without loops: the sink's own changes, to filter what would loop back.

When the sink table is itself a CDC table whose changes are in a lake (the other
direction of an active-active pair), the writes one direction applied to it appear in
its own log, and the other direction would send them back. ScyllaDB writes carry no
origin mark, so they are filtered when reading: a CDC batch is skipped when every one
of its log rows is already among the sink's own changes (same write time, operation,
key and values; the stream, ``cdc$time`` and batch numbering are each cluster's own, and
the TTL is what was left of it when replayed). A change replayed after its TTL ran out
arrives as tombstones, which the other side's log records as a change of its own: it is
sent back once, and stops there, the same tombstones already being on both sides.
What the sink received from this side came from this side's lake, so by then its
original is in the sink's lake; and a batch the sink already holds identically needs
no applying, whatever its origin. The sink's changes are read in the same time slices as
the table's (:mod:`cdcgen.replication.change_slices`): a slice's fingerprints are all a
batch of it can match, since the write time is part of each.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import TYPE_CHECKING, Any

from cdcgen.core.cdc_log import BATCH_SEQ_NO, END_OF_BATCH, STREAM_ID, TIME, TTL

if TYPE_CHECKING:
    import pyarrow as pa

#: Log columns that differ between two clusters' logs of the same write: the stream,
#: time UUID and numbering are each cluster's own, and a replayed write carries what was
#: left of its TTL.
_PER_CLUSTER = (STREAM_ID, TIME, BATCH_SEQ_NO, END_OF_BATCH, TTL)

Fingerprint = tuple[tuple[str, Hashable], ...]


def fingerprints(changes: pa.Table) -> list[Fingerprint]:
    """What identifies each logged change of ``changes`` in any cluster's log (hashable;
    every column but the cluster's own, by name), a column at a time."""
    names = sorted(n for n in changes.column_names if n not in _PER_CLUSTER)
    columns = [[(name, _frozen(v)) for v in changes.column(name).to_pylist()] for name in names]
    if not columns:
        return [() for _ in range(changes.num_rows)]
    return list(zip(*columns, strict=True))


def peer_fingerprints(changes: pa.Table | None) -> frozenset[Fingerprint]:
    """The fingerprints of the sink's own changes of one slice (none: no peer)."""
    if changes is None or changes.num_rows == 0:
        return frozenset()
    return frozenset(fingerprints(changes))


def _frozen(value: Any) -> Hashable:
    if isinstance(value, list | tuple):
        return tuple(_frozen(v) for v in value)
    if isinstance(value, dict):
        return tuple(sorted((k, _frozen(v)) for k, v in value.items()))
    hashable: Hashable = value
    return hashable
