"""From driver rows to Arrow record batches with the lake's schema.

The lake keeps every log column under its own name (``cdc$stream_id`` ... and the base
columns), typed from the driver's result metadata, plus the columns it derives from
them (``write_time``, ``operation_name``, ``base_token``) and its partition columns,
all named in :mod:`cdcgen.core.change_batch`; ``cdc$time`` itself is kept as text.

Every value is kept losslessly, in a type a reader can bind back to a database
(:mod:`.codec`: user types, tuples and durations as structs, collections as lists
and maps, uuid, inet, decimal and varint as their canonical text). Lakes written before
user types, tuples and durations were structs hold them as text: a column a lake table
already holds that way keeps being written that way (:func:`text_columns`), so the
table's schema never changes under it. Everything here runs in Spark tasks and imports
pyarrow lazily.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from operator import itemgetter
from typing import TYPE_CHECKING, Any

from cdcgen.changes.base_tokens import BaseKeyHasher
from cdcgen.changes.codec import (
    Converter,
    arrow_type_and_converter,
    holds_text_for_struct,
    text_value,
)
from cdcgen.changes.derived_columns import day_labels, operation_names, timeuuid_texts
from cdcgen.core.cdc_log import (
    BATCH_SEQ_NO,
    OPERATION,
    STREAM_ID,
    TIME,
    micros_of_timeuuids,
    timeuuid_bytes,
)
from cdcgen.core.change_batch import (
    BASE_TOKEN,
    BUCKET,
    DATE,
    GENERATION,
    OPERATION_NAME,
    WINDOW,
    WRITE_TIME,
)

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = [
    "ColumnSpec",
    "LakeBatchBuilder",
    "Placement",
    "column_specs",
    "lake_schema",
    "text_columns",
]


@dataclass(frozen=True)
class ColumnSpec:
    name: str
    cqltype: Any
    arrow: Any  # pa.DataType
    convert: Converter | None


def column_specs(metadata: Sequence[Any], as_text: Collection[str] = ()) -> list[ColumnSpec]:
    """Specs from a prepared statement's ``result_metadata`` / ``column_metadata``; the
    columns named in ``as_text`` keep their user types, tuples and durations as text
    (:func:`text_columns`)."""
    specs = []
    for column in metadata:
        name, cqltype = column[2], column[3]
        convert: Converter | None
        if name == TIME:
            import pyarrow as pa

            arrow, convert = pa.string(), text_value  # the UUID as text; write_time orders
        else:
            arrow, convert = arrow_type_and_converter(cqltype, text_composites=name in as_text)
        specs.append(ColumnSpec(name, cqltype, arrow, convert))
    return specs


def text_columns(metadata: Sequence[Any], stored: pa.Schema | None) -> frozenset[str]:
    """The log columns a lake table (its current schema ``stored``; None: no table yet)
    holds in the text form of earlier versions: a string where a user type, tuple or
    duration now makes a struct, at the same depth (in a list, a map's keys or values).
    Those keep being written as text, so a run never changes an existing table's schema.
    """
    if stored is None:
        return frozenset()
    kept = set()
    for spec in column_specs(metadata):
        if spec.name in stored.names and holds_text_for_struct(
            stored.field(spec.name).type, spec.arrow
        ):
            kept.add(spec.name)
    return frozenset(kept)


def lake_schema(specs: Sequence[ColumnSpec], with_partitions: bool = True) -> pa.Schema:
    """The Arrow schema of extracted rows (what the Spark job writes)."""
    import pyarrow as pa

    fields = [pa.field(s.name, s.arrow) for s in specs]
    fields += [
        pa.field(WRITE_TIME, pa.timestamp("us", tz="UTC")),
        pa.field(OPERATION_NAME, pa.string()),
        pa.field(BASE_TOKEN, pa.int64()),
    ]
    if with_partitions:
        fields += [
            pa.field(DATE, pa.string()),
            pa.field(GENERATION, pa.string()),
            pa.field(WINDOW, pa.string()),
            pa.field(BUCKET, pa.int32()),
        ]
    return pa.schema(fields)


@dataclass(frozen=True)
class Placement:
    """The partition values of one stream read's rows (``date`` comes per row)."""

    generation: str
    window: str
    bucket: int


class LakeBatchBuilder:
    """Turns a stream's driver rows into Arrow record batches of the lake schema.

    Drops rows already seen for the same stream (same ``cdc$time`` and
    ``cdc$batch_seq_no``): upstream delivery is at least once, the lake is exactly once.
    """

    def __init__(
        self,
        specs: Sequence[ColumnSpec],
        partition_key: Sequence[str],
        protocol: int,
        schema: pa.Schema,
    ) -> None:
        self._specs = list(specs)
        self._schema = schema
        names = [s.name for s in self._specs]
        self.time_column = names.index(TIME)
        self._seq = names.index(BATCH_SEQ_NO)
        self._op = names.index(OPERATION)
        self.stream_column = names.index(STREAM_ID)
        self._pk = [names.index(n) for n in partition_key]
        self._hasher = BaseKeyHasher([self._specs[i].cqltype for i in self._pk], protocol)

    def unique_rows(self, rows: Sequence[Sequence[Any]], seen: set[tuple[Any, Any]]) -> list[Any]:
        """Rows whose (``cdc$time``, ``cdc$batch_seq_no``) was not seen in this stream yet."""
        fresh = []
        for row in rows:
            key = (row[self.time_column], row[self._seq])
            if key in seen:
                continue
            seen.add(key)
            fresh.append(row)
        return fresh

    def to_batch(self, segments: Sequence[tuple[Sequence[Any], Placement]]) -> pa.RecordBatch:
        """One record batch from driver tuples, each segment being one stream read's rows."""
        import numpy as np
        import pyarrow as pa

        rows = [row for segment, _ in segments for row in segment]
        columns = self.columns(rows)
        which = pa.array(np.repeat(np.arange(len(segments)), [len(s) for s, _ in segments]))
        places = [p for _, p in segments]
        partitions = (
            pa.array([p.generation for p in places], pa.string()).take(which),
            pa.array([p.window for p in places], pa.string()).take(which),
            pa.array([p.bucket for p in places], pa.int32()).take(which),
        )
        return self.batch(columns, timeuuid_bytes(columns[self.time_column]), partitions)

    def columns(self, rows: Sequence[Sequence[Any]]) -> list[Sequence[Any]]:
        """Driver rows as one value sequence per selected column (a column at a time:
        ``zip(*rows)`` over a whole batch is slower)."""
        return [list(map(itemgetter(number), rows)) for number in range(len(self._specs))]

    def batch(
        self,
        columns: Sequence[Sequence[Any]],
        times: Any,
        partitions: tuple[pa.Array, pa.Array, pa.Array],
    ) -> pa.RecordBatch:
        """A record batch from column values (:meth:`columns`), their ``cdc$time`` bytes
        (``uint8[n, 16]``, :func:`~cdcgen.core.cdc_log.timeuuid_bytes`) and their
        ``generation``, ``window`` and ``bucket`` arrays."""
        import pyarrow as pa

        arrays = []
        for number, (spec, values) in enumerate(zip(self._specs, columns, strict=True)):
            if number == self.time_column:
                arrays.append(timeuuid_texts(times))
                continue
            if spec.convert is not None:
                values = tuple(spec.convert(v) for v in values)
            arrays.append(pa.array(values, type=spec.arrow))
        written = pa.array(micros_of_timeuuids(times), type=pa.int64())
        arrays.append(written.cast(pa.timestamp("us", tz="UTC")))
        arrays.append(operation_names(columns[self._op]))
        arrays.append(self._hasher.tokens([columns[i] for i in self._pk]))
        arrays.append(day_labels(written))
        arrays.extend(partitions)
        return pa.RecordBatch.from_arrays(arrays, schema=self._schema)
