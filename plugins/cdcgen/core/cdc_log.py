"""A CDC log table as ScyllaDB defines it: its name, its metadata columns, ``cdc$time``,
the ``cdc$operation`` codes, and a CDC-enabled table's retention settings.

ScyllaDB creates ``<table>_scylla_cdc_log`` next to every CDC-enabled base table
(``cdc/log.cc``, ``create_log_schema``): partition key ``cdc$stream_id``, clustering key
``cdc$time`` (a time UUID carrying the write timestamp in microseconds) and
``cdc$batch_seq_no``, then ``cdc$operation``, ``cdc$ttl``, ``cdc$end_of_batch`` and the
base columns. Every name the project uses for them is defined here, once.
"""

from __future__ import annotations

import random
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from enum import IntEnum, StrEnum
from uuid import UUID

import numpy as np
import numpy.typing as npt

from cdcgen.core.errors import InvalidName, LogTableError
from cdcgen.core.identifiers import check_identifier

LOG_SUFFIX = "_scylla_cdc_log"

STREAM_ID = "cdc$stream_id"
TIME = "cdc$time"
BATCH_SEQ_NO = "cdc$batch_seq_no"
OPERATION = "cdc$operation"
TTL = "cdc$ttl"
END_OF_BATCH = "cdc$end_of_batch"
KEY_COLUMNS = (STREAM_ID, TIME, BATCH_SEQ_NO)

#: The metadata columns of every log table, in ScyllaDB's order, with their CQL types.
META_COLUMNS: tuple[tuple[str, str], ...] = (
    (STREAM_ID, "blob"),
    (TIME, "timeuuid"),
    (BATCH_SEQ_NO, "int"),
    (OPERATION, "tinyint"),
    (TTL, "bigint"),
    (END_OF_BATCH, "boolean"),
)


class LogPartitioner(StrEnum):
    """How the cluster places a CDC log partition on the ring.

    ``cdc``: ScyllaDB's ``CDCPartitioner``, the token is the first 8 bytes of the stream
    ID. ``murmur3``: the log table is an ordinary table hashed like any other (a log
    table kept by Apache Cassandra). ``auto`` asks the cluster
    (``system_schema.scylla_tables``, the log table's ``partitioner``).
    """

    AUTO = "auto"
    CDC = "cdc"
    MURMUR3 = "murmur3"


#: ``system_schema.scylla_tables.partitioner`` of every ScyllaDB CDC log table.
SCYLLA_CDC_PARTITIONER = "com.scylladb.dht.CDCPartitioner"
#: The partitioner a log table has when a plain Cassandra keeps it (a sandbox).
MURMUR3_PARTITIONER = "org.apache.cassandra.dht.Murmur3Partitioner"

_COLUMN = re.compile(r"^[a-z][a-z0-9_$]{0,96}$")


DELETED_PREFIX = "cdc$deleted_"
DELETED_ELEMENTS_PREFIX = "cdc$deleted_elements_"


def deleted_column(name: str) -> str:
    """``cdc$deleted_<col>``: true when the write deleted the column (or overwrote a
    non-frozen collection)."""
    return DELETED_PREFIX + name


def deleted_elements_column(name: str) -> str:
    """``cdc$deleted_elements_<col>``: the keys a write removed from a collection."""
    return DELETED_ELEMENTS_PREFIX + name


def quote_column(name: str) -> str:
    """A column name for CQL text: allow-listed, then double-quoted (``cdc$...`` needs it)."""
    if not _COLUMN.match(name):
        raise LogTableError(f"unexpected column name {name!r} in a CDC log table")
    return f'"{name}"'


@dataclass(frozen=True)
class TableRef:
    """A CDC-enabled base table; its log is ``<table>_scylla_cdc_log`` in the same keyspace."""

    keyspace: str
    table: str

    def __post_init__(self) -> None:
        check_identifier(self.keyspace, "keyspace")
        check_identifier(self.table, "table")
        check_identifier(self.log_table, "log table")

    @property
    def log_table(self) -> str:
        return self.table + LOG_SUFFIX

    @property
    def qualified(self) -> str:
        return f"{self.keyspace}.{self.table}"

    @property
    def qualified_log(self) -> str:
        return f"{self.keyspace}.{self.log_table}"

    @classmethod
    def parse(cls, text: str) -> TableRef:
        keyspace, dot, table = text.strip().partition(".")
        if not dot:
            raise InvalidName(f"table {text!r}: expected keyspace.table")
        return cls(keyspace, table)

    @classmethod
    def parse_list(cls, text: str) -> list[TableRef]:
        """``ks.a, ks.b`` as table references, sorted and without repeats."""
        names = {cls.parse(part) for part in text.split(",") if part.strip()}
        return sorted(names, key=lambda t: t.qualified)

    def __str__(self) -> str:
        return self.qualified


def base_table_of(log_table: str) -> str | None:
    """The base table name of a log table name, ``None`` if it is not one."""
    return log_table.removesuffix(LOG_SUFFIX) if log_table.endswith(LOG_SUFFIX) else None


@dataclass(frozen=True)
class CdcTable:
    """A CDC-enabled table as retention sees it.

    ``ttl_seconds`` is the table's ``cdc = {'ttl': N}`` (0: rows never expire); ``created``
    the log table's creation time (ScyllaDB reads it from the schema id, a time UUID),
    ``None`` when unknown (then only the TTL bounds its rows).
    """

    table: TableRef
    ttl_seconds: int
    created: datetime | None = None

    @property
    def name(self) -> str:
        return self.table.qualified


# --- cdc$time ---------------------------------------------------------------------------

GREGORIAN_OFFSET_100NS = 0x01B21DD213814000
"""100 ns intervals between 1582-10-15 and 1970-01-01."""


def timeuuid_bytes(values: Sequence[UUID | bytes]) -> npt.NDArray[np.uint8]:
    """UUIDs, or their 16 bytes each (as ``timeuuidAsBlob`` reads them), as one
    ``uint8[n, 16]`` array of their bytes (big-endian, as on the wire)."""
    joined = b"".join([v if isinstance(v, bytes) else v.bytes for v in values])
    if len(joined) != 16 * len(values):
        raise ValueError(f"{len(values)} time UUIDs cannot take {len(joined)} bytes")
    return np.frombuffer(joined, np.uint8).reshape(-1, 16)


def micros_of_timeuuids(raw: npt.NDArray[np.uint8]) -> npt.NDArray[np.int64]:
    """The write timestamp (microseconds since the Unix epoch) inside each ``cdc$time``
    (:func:`timeuuid_bytes`); a UUID that is not version 1 is refused by value.

    The first 8 bytes are ``time_low``, ``time_mid``, ``time_hi_and_version``: the
    60-bit count of 100 ns since 1582-10-15 is reassembled from them in one pass."""
    versions = raw[:, 6] >> 4
    wrong = np.flatnonzero(versions != 1)
    if len(wrong):
        value = UUID(bytes=raw[wrong[0]].tobytes())
        raise ValueError(f"{value} is not a time UUID (version {value.version})")
    head = np.ascontiguousarray(raw[:, :8]).view(">u8").ravel().astype(np.uint64)
    ticks = ((head & np.uint64(0x0FFF)) << np.uint64(48)) | (
        ((head >> np.uint64(16)) & np.uint64(0xFFFF)) << np.uint64(32)
    )
    ticks |= head >> np.uint64(32)
    return (ticks.astype(np.int64) - GREGORIAN_OFFSET_100NS) // 10


def micros_of_timeuuid(value: UUID) -> int:
    """:func:`micros_of_timeuuids` of one value."""
    return int(micros_of_timeuuids(timeuuid_bytes([value]))[0])


def timeuuid_from_micros(micros: int, rng: random.Random) -> UUID:
    """A ``cdc$time`` as ScyllaDB makes one (``UUID_gen::get_random_time_UUID_from_micros``):
    version 1, the write time in 100 ns units, random clock sequence and node."""
    ticks = micros * 10 + GREGORIAN_OFFSET_100NS
    if not 0 <= ticks < 1 << 60:
        raise ValueError(f"timestamp {micros} us does not fit a time UUID")
    clock_seq = rng.getrandbits(14)
    return UUID(
        fields=(
            ticks & 0xFFFFFFFF,
            (ticks >> 32) & 0xFFFF,
            ((ticks >> 48) & 0x0FFF) | 0x1000,
            0x80 | (clock_seq >> 8),
            clock_seq & 0xFF,
            rng.getrandbits(48),
        )
    )


# --- cdc$operation ----------------------------------------------------------------------


class Operation(IntEnum):
    """ScyllaDB's ``cdc::operation`` codes (``cdc/log.hh``).

    The negative ones are deletes ScyllaDB makes itself rather than a client (a row or
    partition whose time to live ran out, in Alternator or a table's per-row TTL): they
    delete as a client's delete does.
    """

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
    SERVICE_ROW_DELETE = -3
    SERVICE_PARTITION_DELETE = -4

    @property
    def label(self) -> str:
        """Lower-case, space-free name stored in the lake (``range_delete_start_inclusive``)."""
        return self.name.lower()


OPERATION_NAMES: dict[int, str] = {op.value: op.label for op in Operation}


def operation_name(code: int | None) -> str | None:
    """The name of one code; a code outside the list decodes to ``unknown(<n>)`` rather
    than failing (the row checks count those rows); ``None`` stays ``None``."""
    if code is None:
        return None
    return OPERATION_NAMES.get(code, f"unknown({code})")


def operation_names(codes: Iterable[int | None]) -> list[str | None]:
    return [operation_name(code) for code in codes]
