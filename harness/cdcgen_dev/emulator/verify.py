"""Check a CDC log against the generations: is every row in the stream it belongs in?

For each log row the write timestamp comes from ``cdc$time`` and the base token from the
row's partition key columns; the expected stream is the one the generation operating at
that timestamp maps the token to. ``stream_at`` supplies that answer, typically built
from generations read back through the readers (so the check is independent of the
emulator's own bookkeeping). Also checked: within a write (same stream and ``cdc$time``)
``cdc$batch_seq_no`` runs 0..n-1 and only the last row has ``cdc$end_of_batch``.

It checks where rows are, not what they hold (every column shape's values are compared
with the emulator's writes by ``tests/integration/test_every_shape.py``). This scans the
whole log table: fine in the sandbox, never on a real cluster (the pipeline reads per
stream).
"""

from __future__ import annotations

import bisect
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any
from uuid import UUID

from cdcgen.core.cdc_log import micros_of_timeuuid
from cdcgen.core.stream_id import StreamId
from cdcgen.core.tablets import TabletStreamSet
from cdcgen.core.time import from_micros
from cdcgen.core.timeline import GenerationTimeline
from cdcgen_dev.emulator.log_schema import (
    BATCH_SEQ_NO,
    END_OF_BATCH,
    OPERATION,
    STREAM_ID,
    TIME,
    BaseTableSpec,
)
from cdcgen_dev.emulator.partition import partition_token

if TYPE_CHECKING:
    from cdcgen.adapters.cql import CqlClient

StreamAt = Callable[[datetime, int], tuple[datetime, StreamId]]
"""``(write timestamp, token) -> (generation timestamp, stream)``; raises LookupError."""


@dataclass(frozen=True, slots=True)
class LogRow:
    stream: bytes
    time: UUID
    batch_seq_no: int
    operation: int
    end_of_batch: bool | None
    partition: tuple[Any, ...]

    @property
    def write_ts(self) -> datetime:
        return from_micros(micros_of_timeuuid(self.time))


@dataclass
class LogCheck:
    rows: int = 0
    writes: int = 0
    misplaced: list[tuple[LogRow, str]] = field(default_factory=list)
    bad_batches: list[str] = field(default_factory=list)
    rows_by_generation: Counter[datetime] = field(default_factory=Counter)
    operations: Counter[int] = field(default_factory=Counter)

    @property
    def ok(self) -> bool:
        return not self.misplaced and not self.bad_batches


def read_log_rows(client: CqlClient, spec: BaseTableSpec) -> list[LogRow]:
    """Every row of the log table (a full scan: sandbox only)."""
    pk = ", ".join(c.name for c in spec.partition_key)
    columns = ", ".join((STREAM_ID, TIME, BATCH_SEQ_NO, OPERATION, END_OF_BATCH))
    query = f"SELECT {columns}, {pk} FROM {spec.qualified_log_table}"
    result = client.execute(query)
    width = len(spec.partition_key)
    return [
        LogRow(row[0], row[1], row[2], row[3], row[4], tuple(row[5 : 5 + width])) for row in result
    ]


def timeline_stream_at(timeline: GenerationTimeline) -> StreamAt:
    """Lookup in vnode generations: the one operating at the write, then ``get_stream``."""

    def stream_at(write_ts: datetime, token: int) -> tuple[datetime, StreamId]:
        generation = timeline.generation_at(write_ts)
        if generation is None:
            raise LookupError(f"no generation operates at {write_ts.isoformat()}")
        return generation, timeline.description(generation).get_stream(token)

    return stream_at


def tablet_stream_at(stream_sets: Sequence[TabletStreamSet]) -> StreamAt:
    """Lookup in a tablets table's stream sets."""
    ordered = sorted(stream_sets, key=lambda s: s.timestamp)
    stamps = [s.timestamp for s in ordered]

    def stream_at(write_ts: datetime, token: int) -> tuple[datetime, StreamId]:
        position = bisect.bisect_right(stamps, write_ts)
        if position == 0:
            raise LookupError(f"no stream set operates at {write_ts.isoformat()}")
        stream_set = ordered[position - 1]
        return stream_set.timestamp, stream_set.get_stream(token)

    return stream_at


def check_log_routing(spec: BaseTableSpec, rows: Sequence[LogRow], stream_at: StreamAt) -> LogCheck:
    """Compare every row's stream with the expected one and check each write's batch."""
    check = LogCheck(rows=len(rows))
    pk_types = [c.cql_type for c in spec.partition_key]
    batches: dict[tuple[bytes, UUID], list[LogRow]] = defaultdict(list)
    for row in rows:
        batches[(row.stream, row.time)].append(row)
        check.operations[row.operation] += 1
        token = partition_token(pk_types, row.partition)
        try:
            generation, expected = stream_at(row.write_ts, token)
        except LookupError as exc:
            check.misplaced.append((row, str(exc)))
            continue
        check.rows_by_generation[generation] += 1
        if expected.raw != row.stream:
            check.misplaced.append(
                (
                    row,
                    f"in stream {row.stream.hex()}, expected {expected.hex} of generation "
                    f"{generation.isoformat()} for token {token}",
                )
            )
    check.writes = len(batches)
    for (stream, time), batch in batches.items():
        seqs = sorted(r.batch_seq_no for r in batch)
        last = max(batch, key=lambda r: r.batch_seq_no)
        if seqs != list(range(len(batch))):
            check.bad_batches.append(f"write {time} in {stream.hex()}: batch_seq_no {seqs}")
        elif not last.end_of_batch or any(r.end_of_batch for r in batch if r is not last):
            check.bad_batches.append(f"write {time} in {stream.hex()}: end_of_batch misplaced")
    return check
