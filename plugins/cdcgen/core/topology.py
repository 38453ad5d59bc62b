"""A CDC generation's topology description: which stream a token's writes go to.

Mirrors ScyllaDB's ``cdc::topology_description`` (``cdc/generation.hh``): entries sorted by
``token_range_end``, entry ``i`` covering ``(end[i-1], end[i]]`` and entry 0 the wrap-around
range, one stream per shard of the node that owned the vnode. ``make_generation`` is
``make_new_generation_description`` and ``get_stream`` is ``get_stream`` of
``cdc/metadata.cc``; both are pure functions of their inputs here so that a generation can
be rebuilt, validated or looked up anywhere (a task, a Spark executor, a test).

Also here: recovering shard order from a byte-sorted ``set<blob>``. The JSON interchange
format used by the CLI and the lake is :mod:`cdcgen.core.topology_json`.
"""

from __future__ import annotations

import bisect
import random
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field

from cdcgen.core.errors import (
    InvalidDescription,
    InvalidSharding,
    InvalidToken,
    InvalidTopology,
    StreamOrderError,
)
from cdcgen.core.stream_id import MAX_INDEX, StreamId, new_stream_id
from cdcgen.core.tokens import check_sharding, check_token, find_first_token_for_shard, shard_of


@dataclass(frozen=True, slots=True)
class TokenRange:
    """One vnode of a generation: ``(previous range_end, range_end]`` and its streams.

    ``streams[j]`` is the stream for shard ``j`` of the node that owned the vnode when
    the generation was made, sharded with ``sharding_ignore_msb``.
    """

    range_end: int
    streams: tuple[StreamId, ...]
    sharding_ignore_msb: int

    def __post_init__(self) -> None:
        try:
            check_token(self.range_end, "range_end")
        except InvalidToken as exc:
            raise InvalidDescription(str(exc)) from exc
        if not isinstance(self.streams, tuple):
            raise InvalidDescription(f"streams of range ending at {self.range_end} must be a tuple")
        if not self.streams:
            raise InvalidDescription(f"range ending at {self.range_end} has no streams")
        try:
            check_sharding(len(self.streams), self.sharding_ignore_msb)
        except InvalidSharding as exc:
            raise InvalidDescription(f"range ending at {self.range_end}: {exc}") from exc

    def stream_for(self, token: int) -> StreamId:
        """The stream of the shard owning ``token`` (``get_stream`` for one entry)."""
        return self.streams[shard_of(token, len(self.streams), self.sharding_ignore_msb)]


@dataclass(frozen=True, slots=True)
class TopologyDescription:
    """All vnodes of a generation, sorted by ``range_end`` (strictly increasing)."""

    entries: tuple[TokenRange, ...]
    _range_ends: tuple[int, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not isinstance(self.entries, tuple):
            raise InvalidDescription("entries must be a tuple")
        if not self.entries:
            raise InvalidDescription("a topology description needs at least one entry")
        ends = tuple(entry.range_end for entry in self.entries)
        for i in range(1, len(ends)):
            if ends[i] <= ends[i - 1]:
                raise InvalidDescription(
                    f"range ends must be strictly increasing: entry {i} ends at {ends[i]}, "
                    f"entry {i - 1} at {ends[i - 1]}"
                )
        object.__setattr__(self, "_range_ends", ends)

    @property
    def range_ends(self) -> tuple[int, ...]:
        return self._range_ends

    def __len__(self) -> int:
        return len(self.entries)

    def entry_index(self, token: int) -> int:
        """Index of the entry covering ``token``: the first with ``range_end >= token``,
        wrapping to entry 0 past the last one (``std::lower_bound`` in ``cdc/metadata.cc``).
        """
        check_token(token)
        index = bisect.bisect_left(self._range_ends, token)
        return 0 if index == len(self._range_ends) else index

    def get_stream(self, token: int) -> StreamId:
        """The stream a write with this partition token goes to in this generation."""
        return self.entries[self.entry_index(token)].stream_for(token)

    def range_start(self, index: int) -> int:
        """Exclusive start of entry ``index``: the previous entry's end (wrapping)."""
        return self.entries[index - 1].range_end if index else self.entries[-1].range_end

    def streams(self) -> Iterator[StreamId]:
        """Every stream, entry by entry, in shard order."""
        for entry in self.entries:
            yield from entry.streams

    def stream_count(self) -> int:
        return sum(len(entry.streams) for entry in self.entries)


@dataclass(frozen=True, slots=True)
class Node:
    """A token owner as the topology coordinator sees it: its shards and vnode tokens."""

    name: str
    shard_count: int
    ignore_msb: int
    tokens: tuple[int, ...]

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise InvalidTopology(f"node name {self.name!r} must be a non-empty string")
        if not isinstance(self.tokens, tuple):
            raise InvalidTopology(f"node {self.name}: tokens must be a tuple")
        try:
            check_sharding(self.shard_count, self.ignore_msb)
            for token in self.tokens:
                check_token(token)
        except (InvalidToken, InvalidSharding) as exc:
            raise InvalidTopology(f"node {self.name}: {exc}") from exc


def token_owners(nodes: Iterable[Node]) -> dict[int, Node]:
    """Map every ring token to its node; a token claimed by two nodes is an error."""
    owners: dict[int, Node] = {}
    for node in nodes:
        for token in node.tokens:
            other = owners.get(token)
            if other is not None and other is not node:
                raise InvalidTopology(
                    f"token {token} is owned by both node {other.name} and node {node.name}"
                )
            owners[token] = node
    return owners


def ring_tokens(nodes: Iterable[Node]) -> list[int]:
    """Sorted, de-duplicated ring tokens (``get_tokens`` in ``cdc/generation.cc``)."""
    return sorted(token_owners(nodes))


MAX_GENERATION_STREAMS = 1 << 24
"""Ten times the seed's largest cluster (1,638,400 streams): a ring asking for more is a
mistake, refused before gigabytes are spent building it."""


def generation_ring(nodes: Sequence[Node]) -> tuple[dict[int, Node], list[int]]:
    """Owners by token and the sorted ring tokens of a new generation, or
    :class:`InvalidTopology` when none can be made: no tokens, more vnodes than the
    22-bit stream index holds, more than :data:`MAX_GENERATION_STREAMS` streams."""
    owners = token_owners(nodes)
    if not owners:
        raise InvalidTopology("cannot make a generation from a ring without tokens")
    if len(owners) - 1 > MAX_INDEX:
        raise InvalidTopology(f"{len(owners)} vnodes do not fit the 22-bit stream id index")
    streams = sum(node.shard_count for node in owners.values())
    if streams > MAX_GENERATION_STREAMS:
        raise InvalidTopology(
            f"the ring asks for {streams:,} streams (shards x vnodes), "
            f"more than the {MAX_GENERATION_STREAMS:,} a generation may have"
        )
    return owners, sorted(owners)


def make_generation(nodes: Sequence[Node], rng: random.Random) -> TopologyDescription:
    """Build a new generation exactly as ``make_new_generation_description`` does.

    Entry ``i`` ends at the ``i``-th ring token, has vnode index ``i`` and one stream per
    shard of the node owning that token; stream ``j`` sits on the first token of shard
    ``j`` in the vnode (or on the vnode's end when the shard owns none of it). The random
    bits come from ``rng`` in entry order, then shard order, so a seed reproduces a
    generation (``cdcgen.core.generation_arrays`` draws in the same order).
    """
    owners, tokens = generation_ring(nodes)
    entries = []
    for index, end in enumerate(tokens):
        start = tokens[index - 1]  # index 0 wraps to the last token: (T_last, T_0]
        node = owners[end]
        streams = tuple(
            new_stream_id(
                find_first_token_for_shard(start, end, shard, node.shard_count, node.ignore_msb),
                index,
                rng,
            )
            for shard in range(node.shard_count)
        )
        entries.append(TokenRange(end, streams, node.ignore_msb))
    return TopologyDescription(tuple(entries))


def is_optimal(description: TopologyDescription, ring_tokens: Iterable[int]) -> bool:
    """``is_cdc_generation_optimal``: one entry per ring token, every token a range end.

    A generation that is not optimal still works, but its vnodes no longer match the
    ring (a node joined or left without a new generation): ScyllaDB then proposes a new one.
    """
    tokens = set(ring_tokens)
    if len(tokens) != len(description.entries):
        return False
    return tokens.issubset(description.range_ends)


def order_streams_by_shard(
    range_start: int,
    range_end: int,
    streams: Iterable[StreamId],
    ignore_msb: int,
) -> tuple[StreamId, ...]:
    """Recover shard order from a stream set that a driver re-sorted by bytes.

    ScyllaDB stores each entry's streams in shard order, but a CQL ``set<blob>`` comes
    back sorted by bytes. Shard ``j``'s stream is the one whose token is
    ``find_first_token_for_shard(range_start, range_end, j, len(streams), ignore_msb)``.
    Shards owning no token of the range all have streams on ``range_end``; nothing in
    the set tells them apart, so they are given those streams in byte order. (Lookups
    never reach such a shard: no token of the range maps to it. The one ambiguity that
    matters is when a shard's only token in the range is ``range_end`` itself; then its
    stream cannot be told apart from those of the empty shards.)
    """
    ordered_input = sorted(streams)
    count = len(ordered_input)
    if count == 0:
        raise StreamOrderError(f"range ({range_start}, {range_end}] has no streams")
    if len(set(ordered_input)) != count:
        raise StreamOrderError(f"range ({range_start}, {range_end}] lists a stream twice")
    shards_by_token: dict[int, list[int]] = {}
    for shard in range(count):
        token = find_first_token_for_shard(range_start, range_end, shard, count, ignore_msb)
        shards_by_token.setdefault(token, []).append(shard)
    result: list[StreamId | None] = [None] * count
    for stream in ordered_input:
        waiting = shards_by_token.get(stream.token)
        if not waiting:
            raise StreamOrderError(
                f"stream {stream.hex} (token {stream.token}) matches no shard of range "
                f"({range_start}, {range_end}] with {count} shards and ignore_msb {ignore_msb}"
            )
        result[waiting.pop(0)] = stream
    return tuple(stream for stream in result if stream is not None)


# --- JSON interchange ------------------------------------------------------------------
