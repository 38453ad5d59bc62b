"""Stream sets of tablets-based CDC tables, each read as one generation.

Per CDC log table, ScyllaDB keeps the current stream set in ``system.cdc_streams_state``
and every change of it in ``system.cdc_streams_history``; each stream set is a
"generation" of that table alone: one single-shard range per tablet, ending at the
stream's token (the tablet's last token), read under :class:`~cdcgen.schema.SourceSchema`
names like every other source.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING
from uuid import UUID

from cdcgen.adapters.description_rows import parse_stream, tablets_description
from cdcgen.core.cdc_log import TableRef, base_table_of
from cdcgen.core.errors import (
    CorruptGeneration,
    IncompleteGeneration,
    InvalidDescription,
    InvalidStreamHistory,
    InvalidStreamId,
)
from cdcgen.core.generation import Generation
from cdcgen.core.generation_arrays import GenerationArrays
from cdcgen.core.tablets import (
    StreamHistoryRow,
    StreamSetView,
    StreamState,
    TabletStreamSet,
    stream_set_diff,
    stream_set_views,
    stream_sets,
)
from cdcgen.core.time import naive_as_utc
from cdcgen.core.topology import TopologyDescription
from cdcgen.core.windows import GenerationSpan, tablet_spans
from cdcgen.schema import SourceSchema, Table

if TYPE_CHECKING:
    from cdcgen.adapters.cql import CqlClient


class TabletsStreamSource:
    """Stream sets of tablets-based CDC tables; each set is one generation.

    ``tables`` restricts it to some base tables (``"keyspace.table"``); by default every
    table with a row in ``cdc_streams_state``. A stream set's :class:`Generation` has the
    log table's id as ``id`` (the key ScyllaDB stores the streams under) and the base
    table as ``table``.
    """

    def __init__(
        self, client: CqlClient, schema: SourceSchema, tables: Sequence[str] | None = None
    ) -> None:
        self.client = client
        self.schema = schema
        self.tables = tuple(tables) if tables is not None else None

    def table_ids(self) -> dict[UUID, str]:
        """Log table id -> ``"keyspace.table"`` of the base table."""
        if self.tables is not None:
            result = {}
            for name in self.tables:
                ref = TableRef.parse(name)
                rows = list(
                    self.client.execute(
                        "SELECT id FROM system_schema.tables WHERE keyspace_name = %s "
                        "AND table_name = %s",
                        (ref.keyspace, ref.log_table),
                    )
                )
                if not rows:
                    raise CorruptGeneration(
                        f"table {name}: its CDC log table {ref.qualified_log} is missing"
                    )
                result[rows[0].id] = ref.qualified
            return result
        ids = {
            r.table_id
            for r in self.client.execute(
                f"SELECT DISTINCT table_id FROM {self.schema.name(Table.CDC_STREAMS_STATE)}"
            )
        }
        names = {
            r.id: f"{r.keyspace_name}.{base_table_of(r.table_name) or r.table_name}"
            for r in self.client.execute(
                "SELECT keyspace_name, table_name, id FROM system_schema.tables"
            )
            if r.id in ids
        }
        return {table_id: names.get(table_id, str(table_id)) for table_id in ids}

    def stream_sets(self, table_id: UUID) -> tuple[TabletStreamSet, ...]:
        """Every stream set of one table, oldest first (base set, then history diffs)."""
        label = f"tablets table {table_id}"
        state = list(
            self.client.execute(
                f"SELECT timestamp, last_token, stream_id FROM "
                f"{self.schema.name(Table.CDC_STREAMS_STATE)} WHERE table_id = %s",
                (table_id,),
            )
        )
        if not state:
            return ()
        if state[0].timestamp is None:
            raise IncompleteGeneration(f"{label}: cdc_streams_state has streams but no timestamp")
        try:
            base = TabletStreamSet.from_state_rows(
                naive_as_utc(state[0].timestamp),
                {
                    r.last_token: parse_stream(r.stream_id, label, r.last_token)
                    for r in state
                    if r.last_token is not None
                },
            )
            history = [
                StreamHistoryRow(
                    naive_as_utc(r.timestamp),
                    StreamState.from_value(r.stream_state),
                    r.last_token,
                    parse_stream(r.stream_id, label, r.last_token),
                )
                for r in self.client.execute(
                    f"SELECT timestamp, stream_state, last_token, stream_id FROM "
                    f"{self.schema.name(Table.CDC_STREAMS_HISTORY)} WHERE table_id = %s",
                    (table_id,),
                )
            ]
            return stream_sets(base, history)
        except (InvalidStreamHistory, InvalidStreamId) as exc:
            raise CorruptGeneration(f"{label}: {exc}") from exc

    def views(self, generation: Generation) -> tuple[StreamSetView, ...]:
        """What ``system.cdc_streams`` shows for the table of ``generation`` (every stream
        set's current, closed and opened streams)."""
        sets = self.stream_sets(_uuid(generation, generation.label))
        if not sets:
            return ()
        return stream_set_views(sets[0], _history_from_sets(sets))

    def list_generations(self) -> list[Generation]:
        found = [
            Generation(stream_set.timestamp, str(table_id), name)
            for table_id, name in self.table_ids().items()
            for stream_set in self.stream_sets(table_id)
        ]
        return sorted(found)

    def read_description(self, generation: Generation) -> TopologyDescription:
        label = generation.label
        for stream_set in self.stream_sets(_uuid(generation, label)):
            if stream_set.timestamp == generation.timestamp:
                try:
                    return tablets_description(stream_set)
                except InvalidDescription as exc:
                    raise CorruptGeneration(f"{label}: {exc}") from exc
        raise CorruptGeneration(f"{label}: no stream set of this table starts at that time")

    def read_arrays(self, generation: Generation) -> GenerationArrays:
        """One stream per tablet: few enough that the description is cheap."""
        return GenerationArrays.from_description(self.read_description(generation))

    def spans(
        self, table: TableRef, since: datetime | None = None, until: datetime | None = None
    ) -> list[GenerationSpan]:
        """The table's own stream sets overlapping ``[since, until)``: each set bounds
        every stream in it, so a stream is never read before it opened or after it closed."""
        by_name = {name: table_id for table_id, name in self.table_ids().items()}
        table_id = by_name.get(table.qualified)
        if table_id is None:
            raise CorruptGeneration(f"{table}: no tablets stream set in cdc_streams_state")
        spans = tablet_spans(self.stream_sets(table_id))
        return [
            span
            for span in spans
            if not (since is not None and span.end is not None and span.end <= since)
            and not (until is not None and span.start >= until)
        ]


def _history_from_sets(sets: Sequence[TabletStreamSet]) -> list[StreamHistoryRow]:
    rows = []
    for previous, current in itertools.pairwise(sets):
        diff = stream_set_diff(previous.streams, current.streams)
        rows += [
            StreamHistoryRow(current.timestamp, StreamState.CLOSED, s.token, s) for s in diff.closed
        ]
        rows += [
            StreamHistoryRow(current.timestamp, StreamState.OPENED, s.token, s) for s in diff.opened
        ]
    return rows


def _uuid(generation: Generation, label: str) -> UUID:
    try:
        return UUID(generation.id)
    except ValueError:
        raise CorruptGeneration(f"{label}: id {generation.id!r} is not a UUID") from None
