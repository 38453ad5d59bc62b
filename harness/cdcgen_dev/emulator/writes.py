"""Random base writes for the workload: keys, values, and the change each write makes.

Every choice is drawn from the one ``random.Random`` the factory is given, in a fixed
order (never by iterating a set, whose order varies between runs), so a seed replays the
same writes. Updates mix every change ScyllaDB logs differently: values, nulls, and for a
non-frozen set, added elements, removed elements or an overwrite; range deletes cover
both bounds, one open side and a multi-column prefix.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping
from typing import Any

from cdcgen.core.cdc_log import Operation
from cdcgen_dev.emulator.base_writes import (
    RANGE_DELETE,
    BaseRowChange,
    BaseWrite,
    ClusteringRange,
    RangeBound,
)
from cdcgen_dev.emulator.log_schema import BaseTableSpec, ColumnType
from cdcgen_dev.emulator.partition import PARTITION_KEY_TYPES
from cdcgen_dev.emulator.state import EmulatorError

ValueMaker = Callable[[random.Random], Any]

#: Clustering key numbers a write draws from (0..15 unless it needs more rows).
CLUSTERING_KEYS = 16
#: Share of an update's chosen columns set to null (a tombstone).
NULL_FRACTION = 0.10
#: How an update changes a non-frozen set column that it does not set to null.
SET_CHANGES: Mapping[str, float] = {"add": 0.60, "remove": 0.25, "overwrite": 0.15}
#: A range delete's shape: both bounds, only a start, only an end, or (when a prefix
#: exists) the prefix alone (``ck1 = ?`` on a table with more clustering columns).
RANGE_SHAPES: Mapping[str, float] = {"both": 0.6, "start": 0.15, "end": 0.15, "prefix": 0.1}

_SIMPLE_VALUES: dict[str, ValueMaker] = {
    "text": lambda r: f"v{r.getrandbits(32):08x}",
    "varchar": lambda r: f"v{r.getrandbits(32):08x}",
    "ascii": lambda r: f"a{r.getrandbits(32):08x}",
    "int": lambda r: r.randint(-(2**31), 2**31 - 1),
    "bigint": lambda r: r.randint(-(2**63), 2**63 - 1),
    "smallint": lambda r: r.randint(-(2**15), 2**15 - 1),
    "tinyint": lambda r: r.randint(-128, 127),
    "double": lambda r: r.random() * 1000,
    "float": lambda r: float(r.randint(0, 1 << 20)) / 64,
    "boolean": lambda r: r.random() < 0.5,
    "blob": lambda r: r.randbytes(8),
}


def value_maker(cql_type: str) -> ValueMaker:
    """Random values for a data column: simple types and non-frozen sets of them."""
    kind = ColumnType.parse(cql_type)
    if kind.kind == "simple" and kind.args[0] in _SIMPLE_VALUES:
        return _SIMPLE_VALUES[kind.args[0]]
    if kind.kind == "set" and kind.args[0] in _SIMPLE_VALUES:
        element = _SIMPLE_VALUES[kind.args[0]]
        return lambda r: {element(r) for _ in range(r.randint(1, 3))}
    raise EmulatorError(f"the workload cannot generate values of type {cql_type!r}")


def key_maker(cql_type: str, keys: int) -> Callable[[int], Any]:
    """Key number -> key value for int/bigint/smallint/text key columns."""
    if cql_type in ("int", "bigint", "smallint", "tinyint"):
        return lambda n: n
    if cql_type in ("text", "varchar", "ascii"):
        return lambda n: f"k{n}"
    raise EmulatorError(f"the workload cannot generate keys of type {cql_type!r}")


class WriteFactory:
    """Builds random :class:`BaseWrite`s for one table spec.

    ``mix`` weighs the operations (:data:`~cdcgen_dev.emulator.base_writes.RANGE_DELETE`
    for range deletes). A table without clustering columns has no rows to delete apart
    from its partition and no range: a row delete becomes a partition delete there, and
    range deletes are left out.
    """

    def __init__(
        self,
        spec: BaseTableSpec,
        rng: random.Random,
        mix: Mapping[Operation, float],
        *,
        keys: int,
        hot_keys: bool = False,
        max_rows_per_write: int = 3,
        base_ttl: int | None = None,
    ) -> None:
        self.spec = spec
        self.rng = rng
        self.keys = keys
        self.hot_keys = hot_keys
        self.max_rows_per_write = max_rows_per_write
        self.base_ttl = base_ttl
        for column in spec.partition_key:
            if column.cql_type not in PARTITION_KEY_TYPES:
                raise EmulatorError(f"partition key type {column.cql_type!r} is not supported")
        self.pk_makers = [key_maker(c.cql_type, keys) for c in spec.partition_key]
        self.ck_makers = [key_maker(c.cql_type, keys) for c in spec.clustering_key]
        self.values = {c.name: value_maker(c.cql_type) for c in spec.columns}
        self.sets = {c.name for c in spec.columns if c.type.is_multi_cell}
        usable = {op: w for op, w in mix.items() if spec.clustering_key or op is not RANGE_DELETE}
        self.operations = list(usable)
        self.weights = [usable[op] for op in self.operations]
        if sum(self.weights) <= 0:
            raise EmulatorError(f"{spec.qualified_table}: no operation of the mix applies")
        if not spec.clustering_key:
            # Without clustering rows a row delete is a partition delete.
            self.operations = [
                Operation.PARTITION_DELETE if op is Operation.ROW_DELETE else op
                for op in self.operations
            ]

    def key_number(self) -> int:
        if self.hot_keys and self.rng.random() < 0.8:
            return self.rng.randrange(max(1, self.keys // 5))
        return self.rng.randrange(self.keys)

    def make(self, timestamp_us: int) -> BaseWrite:
        rng = self.rng
        operation = rng.choices(self.operations, self.weights)[0]
        number = self.key_number()
        partition = tuple(make(number) for make in self.pk_makers)
        if operation is Operation.PARTITION_DELETE:
            return BaseWrite(operation, partition, (), timestamp_us)
        if operation is RANGE_DELETE:
            return BaseWrite(
                operation, partition, (), timestamp_us, clustering_range=self.clustering_range()
            )
        count = rng.randint(1, self.max_rows_per_write) if self.ck_makers else 1
        numbers = rng.sample(range(max(count, CLUSTERING_KEYS)), count)
        rows = []
        for ck in numbers:
            clustering = tuple(make(ck) for make in self.ck_makers)
            if operation is Operation.ROW_DELETE:
                rows.append(BaseRowChange(clustering))
            elif operation is Operation.INSERT:
                values = {name: make(rng) for name, make in self.values.items()}
                rows.append(BaseRowChange(clustering, values))
            else:
                rows.append(self.update(clustering))
        ttl = self.base_ttl if operation in (Operation.INSERT, Operation.UPDATE) else None
        return BaseWrite(operation, partition, tuple(rows), timestamp_us, ttl)

    def update(self, clustering: tuple[Any, ...]) -> BaseRowChange:
        """One updated row: each chosen column gets a value, a null or (a non-frozen set)
        added elements, removed elements or an overwrite, one of them per column."""
        rng = self.rng
        chosen = [n for n in self.values if rng.random() < 0.7] or list(self.values)[:1]
        values: dict[str, Any] = {}
        removed: dict[str, Any] = {}
        overwritten: set[str] = set()
        for name in chosen:
            if rng.random() < NULL_FRACTION:
                values[name] = None
                continue
            change = "add"
            if name in self.sets:
                change = rng.choices(list(SET_CHANGES), list(SET_CHANGES.values()))[0]
            if change == "remove":
                removed[name] = self.values[name](rng)
                continue
            values[name] = self.values[name](rng)
            if change == "overwrite":
                overwritten.add(name)
        return BaseRowChange(clustering, values, removed, frozenset(overwritten))

    def clustering_range(self) -> ClusteringRange:
        """A range over the clustering column after a random-length prefix of equalities."""
        rng = self.rng
        depth = rng.randrange(len(self.ck_makers))
        prefix = tuple(make(rng.randrange(CLUSTERING_KEYS)) for make in self.ck_makers[:depth])
        shapes = [s for s in RANGE_SHAPES if depth or s != "prefix"]
        shape = rng.choices(shapes, [RANGE_SHAPES[s] for s in shapes])[0]
        make = self.ck_makers[depth]
        # Two distinct keys, ordered by value (``k10`` < ``k2`` for text keys).
        low, high = sorted(make(n) for n in rng.sample(range(CLUSTERING_KEYS), 2))
        start = RangeBound(low, rng.random() < 0.5)
        end = RangeBound(high, rng.random() < 0.5)
        return ClusteringRange(
            prefix,
            start if shape in ("both", "start") else None,
            end if shape in ("both", "end") else None,
        )
