"""The token ring a generation was made for, as the cluster keeps it: nodes, tokens, shards.

A CDC generation is "optimal" for one ring (``is_cdc_generation_optimal``): one entry per
ring token, each with one stream per shard of the node owning the token. To check that,
the pipeline reads the ring where ScyllaDB keeps it:

* raft topology: the node rows of ``system.topology`` (``tokens`` as a ``set<text>`` of
  decimal tokens, ``shard_count``, ``ignore_msb``, ``node_state``); the ring is every node
  holding tokens that has not ``left`` (the topology coordinator builds a generation from
  the normal nodes' tokens plus the bootstrapping node's, ``get_tokens`` in
  ``cdc/generation.cc``);
* gossip: ``tokens`` of ``system.local`` and ``system.peers``. No table stores a gossip
  node's shard count (``scylla_nr_shards`` was dropped from ``system.local``), so
  :attr:`Ring.shards_known` is false and the shard-count rule becomes a consistency rule:
  every range a node owns holds the same number of streams.

Which ring a generation is checked against is :func:`ring_for` (pure); the JSON form kept
with a generation in the lake is :func:`ring_to_json` / :func:`ring_from_json`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, TypedDict

from cdcgen.core.errors import InvalidSharding, InvalidToken, InvalidTopology
from cdcgen.core.time import from_millis, to_millis
from cdcgen.core.tokens import check_sharding, check_token, parse_token
from cdcgen.core.topology import Node

#: Where a ring was read from.
RAFT_RING = "system.topology"
GOSSIP_RING = "system.local + system.peers"
GIVEN_RING = "a topology file"

#: ``node_state`` values whose tokens are not (or no longer) part of the ring.
LEFT = "left"
STATES_WITHOUT_RING_TOKENS = frozenset({LEFT, "none"})
#: The one node :func:`with_left_nodes` gives the range ends of nodes that left.
LEFT_NODES = "nodes that left"


@dataclass(frozen=True, slots=True)
class RingNode:
    """One token owner. ``shard_count``/``ignore_msb`` are ``None`` when the source does
    not store them (gossip mode)."""

    name: str
    tokens: tuple[int, ...]
    shard_count: int | None = None
    ignore_msb: int | None = None
    state: str = "normal"

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise InvalidTopology(f"node name {self.name!r} must be a non-empty string")
        try:
            for token in self.tokens:
                check_token(token)
            if self.shard_count is not None:
                check_sharding(self.shard_count, self.ignore_msb or 0)
        except (InvalidToken, InvalidSharding) as exc:
            raise InvalidTopology(f"node {self.name}: {exc}") from exc


@dataclass(frozen=True, slots=True)
class Ring:
    """The ring as one read saw it (``source``, ``seen_at``)."""

    nodes: tuple[RingNode, ...]
    source: str
    seen_at: datetime | None = None

    @classmethod
    def of_nodes(cls, nodes: Iterable[Node], source: str = GIVEN_RING) -> Ring:
        """A ring from core :class:`~cdcgen.core.topology.Node` values (shards known)."""
        return cls(
            tuple(RingNode(n.name, n.tokens, n.shard_count, n.ignore_msb) for n in nodes), source
        )

    @property
    def shards_known(self) -> bool:
        """Whether every node's shard count was read (raft: yes; gossip: no); the range
        ends of nodes that left (:func:`with_left_nodes`) have none to read."""
        return all(node.shard_count is not None for node in self.live_nodes)

    @property
    def live_nodes(self) -> tuple[RingNode, ...]:
        """The nodes the ring was read with (not the range ends of nodes that left)."""
        return tuple(node for node in self.nodes if node.state != LEFT)

    @property
    def left_tokens(self) -> int:
        """Range ends of nodes that left after the generation was made."""
        return sum(len(node.tokens) for node in self.nodes if node.state == LEFT)

    def owners(self) -> dict[int, RingNode]:
        """Every ring token and the node owning it; a token owned twice is an error."""
        found: dict[int, RingNode] = {}
        for node in self.nodes:
            for token in node.tokens:
                other = found.get(token)
                if other is not None and other.name != node.name:
                    raise InvalidTopology(
                        f"token {token} is owned by both node {other.name} and node {node.name}"
                    )
                found[token] = node
        return found

    @property
    def vnode_count(self) -> int:
        """Distinct ring tokens: the entry count of an optimal generation."""
        return len(self.owners())

    def describe(self) -> str:
        """One line for logs and reports: where it came from, nodes, tokens, shards."""
        nodes = self.live_nodes
        shards = (
            f"{sum(n.shard_count or 0 for n in nodes)} shards"
            if self.shards_known
            else "shard counts not stored"
        )
        left = f" ({self.left_tokens} of them of nodes that left since)" if self.left_tokens else ""
        seen = f", read {self.seen_at.isoformat(timespec='seconds')}" if self.seen_at else ""
        return f"{self.source}: {len(nodes)} nodes, {self.vnode_count} tokens{left}, {shards}{seen}"


def ring_from_rows(
    rows: Iterable[tuple[str, Iterable[str] | None, int | None, int | None, str]],
    source: str,
    seen_at: datetime | None = None,
) -> Ring:
    """``(name, tokens as text, shard_count, ignore_msb, node_state)`` rows as a ring.

    Nodes without tokens, and nodes that ``left`` (or have not joined), are not in it.
    """
    nodes = []
    for name, texts, shard_count, ignore_msb, state in rows:
        if state in STATES_WITHOUT_RING_TOKENS or not texts:
            continue
        try:
            tokens = tuple(sorted(parse_token(text) for text in texts))
        except InvalidToken as exc:
            raise InvalidTopology(f"node {name}: {exc}") from None
        nodes.append(RingNode(name, tokens, shard_count, ignore_msb, state))
    return Ring(tuple(sorted(nodes, key=lambda n: n.name)), source, seen_at)


def with_left_nodes(ring: Ring, range_ends: Iterable[int]) -> Ring:
    """The ring a generation was made for, as far as a ring read after nodes left shows it.

    ScyllaDB makes a generation when a node joins, not when one leaves (only an
    operator's ``nodetool checkAndRepairCdcStreams`` replaces the no longer optimal
    one): the operating one goes on, its ranges refining the ring's now coarser vnodes,
    so writes stay colocated. A ring first read after such a leave (a pipeline deployed
    on a cluster that lost nodes since its last join) has every token as a range end of
    the generation, and lacks some of its range ends. Those go to one pseudo node in
    state ``left``, of no known shard count and owning no range (the checks of a range
    against its owner skip them): the generation is then checked against the ring it was
    made for, but for those ranges' stream counts. Range ends that are no node's token
    cannot be told from them then. A ring with a token that is no range end is returned
    as it is: the generation does not refine it, and the checks against it fail as they
    should.
    """
    tokens = set(ring.owners())
    ends = set(range_ends)
    if not tokens or not tokens < ends:
        return ring
    left = RingNode(LEFT_NODES, tuple(sorted(ends - tokens)), state=LEFT)
    return Ring((*ring.nodes, left), ring.source, ring.seen_at)


def ring_differences(recorded: Ring, other: Ring) -> list[str]:
    """What changed from ``recorded`` to ``other``, in words (empty: the same ring)."""
    before, after = recorded.owners(), other.owners()
    found = [f"token {t} missing" for t in sorted(set(before) - set(after))]
    found += [f"token {t} added" for t in sorted(set(after) - set(before))]
    shards = {n.name: n.shard_count for n in recorded.nodes}
    for node in other.nodes:
        if node.name in shards and shards[node.name] != node.shard_count:
            found.append(f"node {node.name} shard count {shards[node.name]} -> {node.shard_count}")
    return found


def ring_for(recorded: Ring | None) -> tuple[Ring | None, str]:
    """The ring a generation is validated against, and why, in words.

    That is the ring recorded with the generation (the one it was made from, seen when
    the generation was first the newest); a generation without a record has no known ring.
    """
    if recorded is not None:
        return recorded, f"the ring recorded with this generation ({recorded.describe()})"
    return None, (
        "no ring was recorded with this generation (no run saw it as the newest committed "
        "one), so the checks against the ring did not run"
    )


# --- JSON -------------------------------------------------------------------------------


class RingNodeJson(TypedDict):
    """A node of a ring document (its shard count and sharding unknown: null)."""

    name: str
    shard_count: int | None
    ignore_msb: int | None
    state: str
    tokens: list[int]


class RingJson(TypedDict):
    """A ring document: where the ring was read, when, and its nodes."""

    source: str
    seen_at_ms: int | None
    nodes: list[RingNodeJson]


def ring_to_json(ring: Ring) -> RingJson:
    """``{"source", "seen_at_ms", "nodes": [{"name", "shard_count", "ignore_msb",
    "state", "tokens"}]}``: a superset of the topology file format."""
    return RingJson(
        source=ring.source,
        seen_at_ms=to_millis(ring.seen_at) if ring.seen_at else None,
        nodes=[
            RingNodeJson(
                name=n.name,
                shard_count=n.shard_count,
                ignore_msb=n.ignore_msb,
                state=n.state,
                tokens=list(n.tokens),
            )
            for n in ring.nodes
        ],
    )


def ring_from_json(obj: Any) -> Ring:
    """Parse :func:`ring_to_json` output or a topology file (``shard_count`` may be null)."""
    if not isinstance(obj, Mapping) or not isinstance(obj.get("nodes"), Sequence):
        raise InvalidTopology("a ring must be an object with a 'nodes' list")
    nodes = []
    for i, node in enumerate(obj["nodes"]):
        if not isinstance(node, Mapping):
            raise InvalidTopology(f"nodes[{i}]: expected an object")
        tokens = node.get("tokens")
        if not isinstance(tokens, list) or not all(
            isinstance(t, int) and not isinstance(t, bool) for t in tokens
        ):
            raise InvalidTopology(f"nodes[{i}].tokens: expected a list of integers")
        nodes.append(
            RingNode(
                str(node.get("name") or ""),
                tuple(tokens),
                _optional_int(node.get("shard_count"), f"nodes[{i}].shard_count"),
                _optional_int(node.get("ignore_msb"), f"nodes[{i}].ignore_msb"),
                str(node.get("state") or "normal"),
            )
        )
    seen = obj.get("seen_at_ms")
    return Ring(
        tuple(nodes),
        str(obj.get("source") or GIVEN_RING),
        from_millis(int(seen)) if isinstance(seen, int) else None,
    )


def _optional_int(value: Any, where: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidTopology(f"{where}: expected an integer or null, got {value!r}")
    return value
