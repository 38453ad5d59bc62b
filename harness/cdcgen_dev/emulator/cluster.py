"""The simulated ScyllaDB cluster: nodes join, and every join makes a new CDC generation.

:meth:`SandboxCluster.join_node` does what a topology change does on ScyllaDB: the new node
gets random vnode tokens, a new generation is built over every node's tokens with the
core's ``make_generation`` (``make_new_generation_description``), its timestamp is
``coordinator clock + 2 * ring_delay + leeway`` (no delay for the cluster's first
generation; ``new_generation_timestamp``) and its metadata is written in the chosen
source mode (:mod:`cdcgen_dev.emulator.metadata_writers`). Faults from
:mod:`cdcgen_dev.emulator.faults` can corrupt or half-write it.

Each simulated node stands on a real Cassandra host (round robin over the hosts, so on the
three-node sandbox ``node2`` is 127.0.0.2 and stopping that process makes ``node2``
unreachable) and has its own clock: the host's clock plus a configurable skew.
"""

from __future__ import annotations

import itertools
import json
import random
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

from cdcgen.adapters.description_rows import v1_generation_id
from cdcgen.core.cdc_log import timeuuid_from_micros
from cdcgen.core.errors import GenerationTimestampNotIncreasing
from cdcgen.core.generation import SourceMode
from cdcgen.core.time import to_micros, truncate_to_millis
from cdcgen.core.timeline import GenerationTimeline, new_generation_timestamp
from cdcgen.core.tokens import DEFAULT_IGNORE_MSB, MAX_TOKEN, MIN_TOKEN
from cdcgen.core.topology import TopologyDescription, make_generation
from cdcgen.core.topology_json import description_to_json
from cdcgen.schema import SourceSchema
from cdcgen_dev.emulator import faults as fault_rules
from cdcgen_dev.emulator.faults import GenerationFault
from cdcgen_dev.emulator.metadata_writers import (
    write_gossip_generation,
    write_gossip_ring,
    write_left_node,
    write_raft_generation,
    write_topology_nodes,
    write_v1_generation,
)
from cdcgen_dev.emulator.raw import description_from_raw, raw_from_description
from cdcgen_dev.emulator.schema_setup import ensure_schema
from cdcgen_dev.emulator.state import (
    VNODES_SCOPE,
    EmulatorError,
    GenerationRecord,
    SimNode,
    delete_node,
    load_generations,
    load_nodes,
    save_generation,
    save_node,
)

if TYPE_CHECKING:
    from cdcgen.adapters.cql import CqlClient
    from cdcgen.config import PipelineConfig

DEFAULT_VNODES = 16
DEFAULT_SHARDS = 2


def utc_now() -> datetime:
    return datetime.now(UTC)


@dataclass(frozen=True)
class JoinResult:
    """The node that joined and the generation its join created (none in tablets mode)."""

    node: SimNode
    generation: GenerationRecord | None
    description: TopologyDescription | None


def next_node_name(nodes: Sequence[SimNode]) -> str:
    """``node<n>`` for the first ``n`` past the node count that no node has. A left
    node's name may come back: the nodes' rows are keyed by host ID, which is new."""
    taken = {n.name for n in nodes}
    return next(f"node{n}" for n in itertools.count(len(nodes) + 1) if f"node{n}" not in taken)


def random_tokens(count: int, taken: set[int], rng: random.Random) -> tuple[int, ...]:
    """``count`` distinct random ring tokens not already owned by another node."""
    tokens: set[int] = set()
    while len(tokens) < count:
        token = rng.randint(MIN_TOKEN + 1, MAX_TOKEN)
        if token not in taken:
            tokens.add(token)
    return tuple(sorted(tokens))


class SandboxCluster:
    """Facade over the emulator's state and metadata writers for one keyspace prefix."""

    def __init__(
        self,
        client: CqlClient,
        schema: SourceSchema,
        *,
        ring_delay: timedelta = timedelta(seconds=30),
        leeway: timedelta = timedelta(seconds=5),
    ) -> None:
        self.client = client
        self.schema = schema
        self.ring_delay = ring_delay
        self.leeway = leeway

    @classmethod
    def from_config(cls, client: CqlClient, config: PipelineConfig) -> SandboxCluster:
        return cls(
            client,
            config.source_schema,
            ring_delay=config.ring_delay,
            leeway=config.generation_leeway,
        )

    # --- state --------------------------------------------------------------------------

    def setup(self, *, legacy_v1: bool = False) -> None:
        ensure_schema(self.client, self.schema, legacy_v1=legacy_v1)

    def nodes(self) -> list[SimNode]:
        return load_nodes(self.client, self.schema)

    def node(self, name: str) -> SimNode:
        for node in self.nodes():
            if node.name == name:
                return node
        raise EmulatorError(f"no sandbox node named {name!r}")

    def generations(self, scope: str = VNODES_SCOPE) -> list[GenerationRecord]:
        return load_generations(self.client, self.schema, scope)

    def timeline(self) -> GenerationTimeline:
        """What the emulated coordinators know (their ``cdc::metadata``).

        Committed generations the nodes could load are inserted; ones they could not
        (half-written, unparsable) are only prepared, so writes to them are refused.
        """
        timeline = GenerationTimeline()
        for record in self.generations():
            if not record.committed:
                continue
            if record.loaded:
                timeline.insert(record.timestamp, record.description())
            else:
                timeline.prepare(record.timestamp)
        return timeline

    def host_addresses(self) -> list[str]:
        """The real Cassandra hosts the simulated nodes stand on, in address order."""
        hosts = self.client.cluster.metadata.all_hosts()
        return sorted({str(h.address) for h in hosts}) or ["127.0.0.1"]

    # --- clocks and liveness -------------------------------------------------------------

    def clock(self, node: SimNode, now: datetime | None = None) -> datetime:
        """The node's emulated clock: the host's clock plus the node's skew."""
        return (utc_now() if now is None else now) + node.clock_skew

    def set_clock_skew(self, name: str, skew: timedelta) -> SimNode:
        node = replace(self.node(name), clock_skew=skew)
        save_node(self.client, self.schema, node)
        return node

    def set_node_up(self, name: str, up: bool) -> SimNode:
        """Mark a simulated node up or down (a down node's clock cannot be read)."""
        node = replace(self.node(name), up=up)
        save_node(self.client, self.schema, node)
        return node

    def up_nodes(self) -> list[SimNode]:
        return [n for n in self.nodes() if n.up]

    # --- topology changes ----------------------------------------------------------------

    def join_node(
        self,
        mode: SourceMode,
        *,
        name: str | None = None,
        shards: int = DEFAULT_SHARDS,
        ignore_msb: int = DEFAULT_IGNORE_MSB,
        vnodes: int = DEFAULT_VNODES,
        tokens: Sequence[int] | None = None,
        seed: int | None = None,
        faults: Sequence[GenerationFault] = (),
        now: datetime | None = None,
    ) -> JoinResult:
        """Add a node and (except in tablets mode) create and write a new generation."""
        mode = SourceMode(mode)
        self.setup(legacy_v1=mode is SourceMode.V1)
        rng = random.Random(seed)
        existing = self.nodes()
        name = name or next_node_name(existing)
        if any(n.name == name for n in existing):
            raise EmulatorError(f"a sandbox node named {name!r} already exists")
        if vnodes < 1 and not tokens:
            raise EmulatorError("a joining node needs at least one token (--vnodes >= 1)")
        taken = {t for n in existing for t in n.tokens}
        if tokens:
            clash = taken.intersection(tokens)
            if clash:
                raise EmulatorError(f"tokens {sorted(clash)} are already owned by other nodes")
            node_tokens = tuple(sorted(set(tokens)))
        else:
            node_tokens = random_tokens(vnodes, taken, rng)
        hosts = self.host_addresses()
        joined_at = truncate_to_millis(utc_now() if now is None else now)
        node = SimNode(
            name=name,
            host_id=uuid.UUID(int=rng.getrandbits(128), version=4),
            address=hosts[len(existing) % len(hosts)],
            tokens=node_tokens,
            shard_count=shards,
            ignore_msb=ignore_msb,
            joined_at=joined_at,
        )
        node.as_core_node()  # validates shards/ignore_msb/tokens before anything is written
        all_nodes = [*existing, node]
        save_node(self.client, self.schema, node)
        if mode in (SourceMode.RAFT, SourceMode.TABLETS):
            write_topology_nodes(self.client, self.schema, all_nodes)
        else:
            write_gossip_ring(self.client, self.schema, all_nodes)
        if mode is SourceMode.TABLETS:
            return JoinResult(node, None, None)

        ring = fault_rules.generation_ring([n.as_core_node() for n in all_nodes], faults)
        description = make_generation(ring, rng)
        # Raft: the topology coordinator (the first live node) picks the timestamp;
        # gossip and V1: the joining node itself.
        live = [n for n in existing if n.up]
        coordinator = live[0] if mode is SourceMode.RAFT and live else node
        timestamp = self._next_timestamp(self.clock(coordinator, now))
        record = self._write_generation(mode, timestamp, description, faults, rng)
        save_generation(self.client, self.schema, record)
        return JoinResult(node, record, description)

    def leave_node(self, name: str, mode: SourceMode) -> SimNode:
        """Decommission a node: it leaves the ring, and no new generation is made.

        ScyllaDB makes a generation only when a node joins ("stream IDs will only change
        if you join a new node to the cluster", docs/features/cdc): the operating one
        still colocates, its ranges refining the ring's coarser vnodes, but it is no
        longer optimal for the ring (``is_cdc_generation_optimal``). The node's row of
        ``system.topology`` stays, ``left`` and without tokens; a gossip ring loses it.
        """
        mode = SourceMode(mode)
        node = self.node(name)
        remaining = [n for n in self.nodes() if n.name != name]
        if not remaining:
            raise EmulatorError(f"{name} is the cluster's last node: it cannot leave")
        delete_node(self.client, self.schema, name)
        if mode in (SourceMode.RAFT, SourceMode.TABLETS):
            write_left_node(self.client, self.schema, node)
        else:
            write_gossip_ring(self.client, self.schema, remaining, left=[node])
        return node

    def _next_timestamp(self, coordinator_clock: datetime) -> datetime:
        committed = [g for g in self.generations() if g.committed]
        last = committed[-1].timestamp if committed else None
        try:
            return new_generation_timestamp(
                coordinator_clock, self.ring_delay, self.leeway, last=last, first=not committed
            )
        except GenerationTimestampNotIncreasing:
            # A skewed coordinator: ScyllaDB would refuse to go back; stay just after the last.
            assert last is not None
            return last + timedelta(milliseconds=1)

    def _write_generation(
        self,
        mode: SourceMode,
        timestamp: datetime,
        description: TopologyDescription,
        faults: Sequence[GenerationFault],
        rng: random.Random,
    ) -> GenerationRecord:
        raw = fault_rules.apply_row_faults(raw_from_description(description), faults)
        rows = fault_rules.rows_to_write(raw, faults)
        commit = fault_rules.commits(faults)
        if mode is SourceMode.RAFT:
            data_id = timeuuid_from_micros(to_micros(utc_now()), rng)
            write_raft_generation(self.client, self.schema, data_id, timestamp, rows, commit=commit)
            generation_id = str(data_id)
        elif mode is SourceMode.GOSSIP:
            description_id = uuid.UUID(int=rng.getrandbits(128), version=4)
            write_gossip_generation(
                self.client, self.schema, description_id, timestamp, rows, len(raw), commit=commit
            )
            generation_id = str(description_id)
        else:
            write_v1_generation(self.client, self.schema, timestamp, rows, commit=commit)
            generation_id = v1_generation_id(timestamp)
        try:
            loadable = description_from_raw(raw)
        except ValueError:
            loadable = None
        loaded = commit and loadable is not None and len(rows) == len(raw)
        return GenerationRecord(
            scope=VNODES_SCOPE,
            timestamp=timestamp,
            id=generation_id,
            mode=mode.value,
            committed=commit,
            loaded=loaded,
            description_json=json.dumps(description_to_json(loadable)) if loadable else None,
            faults=tuple(str(f) for f in faults),
        )
