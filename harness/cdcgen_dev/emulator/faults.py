"""Fault injection: the ways a generation's metadata can be wrong or half-written.

Each fault names one thing that happens to real clusters (or that a reader must survive
anyway), so tests can prove that readers and validators notice it:

* ``missing-stream``: an entry lost its last stream (shard count no longer matches);
* ``duplicate-stream``: entry ``k + 1``'s first stream replaced by entry ``k``'s first
  stream, so one stream ID appears in two ranges;
* ``ring-gap``: entry ``k`` is dropped, its range silently absorbed by the next entry;
* ``bad-version``: one stream ID carries version 2, which ScyllaDB refuses to parse;
* ``partial-rows``: (gossip) fewer description rows than ``num_ranges`` were written, as
  when the joining node fails half-way through its CL=ALL insert;
* ``uncommitted``: the description rows exist but the generation's ID/timestamp was never
  committed (raft), gossiped (gossip) or published (V1): streams without a timestamp;
* ``ring-token-missing``: the generation is made for the ring without its ``k``-th token
  (a valid description, one vnode short of the ring the nodes report);
* ``shard-count-changed``: the generation is made as if the node owning the ring's
  ``k``-th token had twice its shards (a valid description whose streams per range
  disagree with the shard count the node reports).

The first four transform the rows (pure functions here); ``partial-rows`` and
``uncommitted`` change what the writers commit (:func:`rows_to_write`, :func:`commits`);
the last two change the ring the generation is made from (:func:`generation_ring`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from enum import StrEnum

from cdcgen.core.stream_id import VERSION_BITS
from cdcgen.core.topology import Node, ring_tokens
from cdcgen_dev.emulator.raw import RawDescription, RawRange


class FaultKind(StrEnum):
    MISSING_STREAM = "missing-stream"
    DUPLICATE_STREAM = "duplicate-stream"
    RING_GAP = "ring-gap"
    BAD_VERSION = "bad-version"
    PARTIAL_ROWS = "partial-rows"
    UNCOMMITTED = "uncommitted"
    RING_TOKEN_MISSING = "ring-token-missing"
    SHARD_COUNT_CHANGED = "shard-count-changed"


class FaultError(ValueError):
    """A fault that cannot be applied to this generation (e.g. entry out of range)."""


@dataclass(frozen=True, slots=True)
class GenerationFault:
    """One fault, applied to entry ``entry`` (for ``partial-rows``: rows kept = ``entry``)."""

    kind: FaultKind
    entry: int = 0

    @classmethod
    def parse(cls, text: str) -> GenerationFault:
        """``KIND`` or ``KIND:N`` as given on the command line."""
        kind_text, _, number = text.partition(":")
        try:
            kind = FaultKind(kind_text.strip())
        except ValueError:
            choices = ", ".join(k.value for k in FaultKind)
            raise FaultError(f"unknown fault {kind_text!r}: expected one of {choices}") from None
        try:
            entry = int(number) if number else 0
        except ValueError:
            raise FaultError(f"fault {text!r}: {number!r} is not an integer") from None
        if entry < 0:
            raise FaultError(f"fault {text!r}: the entry number must be >= 0")
        return cls(kind, entry)

    def __str__(self) -> str:
        return f"{self.kind.value}:{self.entry}"


ROW_FAULTS = frozenset(
    {
        FaultKind.MISSING_STREAM,
        FaultKind.DUPLICATE_STREAM,
        FaultKind.RING_GAP,
        FaultKind.BAD_VERSION,
    }
)


def _entry(raw: Sequence[RawRange], fault: GenerationFault) -> int:
    if not 0 <= fault.entry < len(raw):
        raise FaultError(f"fault {fault}: the generation has only {len(raw)} entries")
    return fault.entry


def with_bad_version(stream: bytes, version: int = 2) -> bytes:
    """The same stream ID with its version nibble (low 4 bits of byte 15) set to ``version``."""
    mask = (1 << VERSION_BITS) - 1
    return stream[:15] + bytes([(stream[15] & ~mask & 0xFF) | (version & mask)])


def apply_row_faults(raw: RawDescription, faults: Iterable[GenerationFault]) -> RawDescription:
    """Apply the row-changing faults in order; the others are ignored here."""
    rows = list(raw)
    for fault in faults:
        if fault.kind not in ROW_FAULTS:
            continue
        i = _entry(rows, fault)
        if fault.kind is FaultKind.MISSING_STREAM:
            rows[i] = replace(rows[i], streams=rows[i].streams[:-1])
        elif fault.kind is FaultKind.DUPLICATE_STREAM:
            if len(rows) < 2:
                raise FaultError(f"fault {fault}: needs at least two entries")
            j = (i + 1) % len(rows)
            rows[j] = replace(rows[j], streams=(rows[i].streams[0], *rows[j].streams[1:]))
        elif fault.kind is FaultKind.RING_GAP:
            if len(rows) < 2:
                raise FaultError(f"fault {fault}: cannot drop the only entry")
            del rows[i]
        elif fault.kind is FaultKind.BAD_VERSION:
            streams = list(rows[i].streams)
            streams[0] = with_bad_version(streams[0])
            rows[i] = replace(rows[i], streams=tuple(streams))
    return tuple(rows)


def rows_to_write(raw: RawDescription, faults: Iterable[GenerationFault]) -> RawDescription:
    """The rows actually written: all of them, or the first N for ``partial-rows:N``."""
    for fault in faults:
        if fault.kind is FaultKind.PARTIAL_ROWS:
            if not 0 <= fault.entry < len(raw):
                raise FaultError(f"fault {fault}: keep fewer rows than the generation's {len(raw)}")
            return raw[: fault.entry]
    return raw


def commits(faults: Iterable[GenerationFault]) -> bool:
    """False when the generation's ID must never be committed (``uncommitted``)."""
    return not any(f.kind is FaultKind.UNCOMMITTED for f in faults)


def generation_ring(nodes: Sequence[Node], faults: Iterable[GenerationFault]) -> list[Node]:
    """The ring a generation is made from: the nodes' own, or (ring faults) another one."""
    ring = list(nodes)
    for fault in faults:
        if fault.kind not in (FaultKind.RING_TOKEN_MISSING, FaultKind.SHARD_COUNT_CHANGED):
            continue
        tokens = ring_tokens(ring)
        if not 0 <= fault.entry < len(tokens) or len(tokens) < 2:
            raise FaultError(f"fault {fault}: the ring has {len(tokens)} tokens")
        token = tokens[fault.entry]
        i = next(k for k, node in enumerate(ring) if token in node.tokens)
        if fault.kind is FaultKind.RING_TOKEN_MISSING:
            kept = tuple(t for t in ring[i].tokens if t != token)
            ring[i] = replace(ring[i], tokens=kept)
        else:
            ring[i] = replace(ring[i], shard_count=ring[i].shard_count * 2)
    return ring
