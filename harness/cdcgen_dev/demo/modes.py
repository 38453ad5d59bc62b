"""What the demo emulates in each source mode: the cluster's history and a workload.

Each mode is driven the way the end-to-end scenarios drive it
(``tests/e2e/test_generations_dag.py``), with a workload on one CDC table so the
changes DAG has rows to replicate:

* ``raft``: three nodes join one after another, each join commits a generation;
  the workload runs across the last switch. Every generation is found.
* ``gossip``: the same joins, but a gossip cluster only tells readers its *current*
  generation, so one is found and published; the workload writes only once that
  generation operates (rows in an earlier one would be in streams no reader knows).
* ``v1``: a ScyllaDB 4.3 cluster, two joins with V1 descriptions; published once as
  V1, then again from the V2 tables after the 4.3 -> 4.4 rewrite (``rewritten``).
* ``tablets``: one node, a CDC table on four tablets (its first stream set), then
  every tablet splits (a second set of eight streams); the workload runs across it.

In raft mode (``make demo``'s), the demo also replicates: it bootstraps a sink, then the
source writes more (:class:`ModePlan.more`), across one more generation switch, so that
the replication's apply replays changes of every operation kind, some in a generation
the snapshot never saw. The other modes stop after the changes DAG: the replication
reads the lake and the base table, which are the same whatever the source mode.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from cdcgen.core.generation import SourceMode

if TYPE_CHECKING:
    from cdcgen_dev.emulator import SandboxCluster

Say = Callable[[str], None]
Emulator = Callable[["SandboxCluster", str, int, Say], "Emulated"]
#: ``more(cluster, keyspace, nodes, say)``: writes after the sink's bootstrap.
Continuation = Callable[["SandboxCluster", str, int, Say], "MoreWrites"]

#: The keyspace and table the workload writes and the changes DAG replicates.
SHOP_TABLE = "orders"
#: Writes per second and distinct partition keys of the workload.
WORKLOAD_RATE = 100
WORKLOAD_KEYS = 200
#: How long the workload keeps writing after the last switch.
AFTER_SWITCH = timedelta(seconds=3)
#: Initial tablets of the tablets mode's CDC table (a power of two).
TABLETS = 4


@dataclass(frozen=True)
class Emulated:
    """What the emulated cluster holds, and what the pipeline must find in it."""

    mode: SourceMode
    table: str  # keyspace.table of the CDC table
    history: list[dict[str, Any]]  # one entry per generation or stream set made
    writes: int
    #: Generations (or tablet stream sets) a reader in this mode can find and publish.
    expected_generations: int
    #: The source connection's extras this mode needs (tablets: which tables).
    connection_extra: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class MoreWrites:
    """What a mode wrote after the sink's bootstrap, and the switch they crossed."""

    writes: int
    switch: str  # "" when none


@dataclass(frozen=True)
class ModePlan:
    """One ``--mode``: its one-line description and how to emulate it."""

    mode: SourceMode
    description: str
    #: Simulated nodes that join (each vnodes join commits a generation).
    nodes: int
    #: ``emulate(cluster, keyspace, nodes, say)``
    emulate: Emulator
    #: After the sink's bootstrap: a switch and more writes (None: the demo does not
    #: replicate in this mode).
    more: Continuation | None = None


def _iso(moment: datetime) -> str:
    return moment.isoformat(timespec="milliseconds")


def _workload(cluster: SandboxCluster, keyspace: str, until: datetime, seed: int = 1) -> int:
    """Writes to ``keyspace.orders`` from now until ``until``; how many were made."""
    from cdcgen_dev.emulator import WorkloadSpec, run_workload

    duration = max(until - datetime.now(UTC), timedelta(seconds=1))
    spec = WorkloadSpec(
        keyspace=keyspace, rate=WORKLOAD_RATE, duration=duration, keys=WORKLOAD_KEYS, seed=seed
    )
    return run_workload(cluster, spec).writes


def _join_nodes(
    cluster: SandboxCluster, mode: SourceMode, nodes: int, keyspace: str, say: Say
) -> list[dict[str, Any]]:
    """``nodes`` joins, each committing a generation; the CDC table after the first."""
    from cdcgen_dev.emulator import create_cdc_table, orders_table

    history = []
    for seed in range(nodes):
        joined = cluster.join_node(mode, seed=seed)
        assert joined.generation is not None and joined.description is not None
        entry = {
            "node": joined.node.name,
            "generation": _iso(joined.generation.timestamp),
            "streams": joined.description.stream_count(),
        }
        history.append(entry)
        streams = entry["streams"]
        say(f"      {entry['node']} joined: generation {entry['generation']} ({streams} streams)")
        if seed == 0:
            # 24 h CDC TTL: every generation may still hold rows (the V1 rewrite keeps all).
            create_cdc_table(cluster, orders_table(keyspace, SHOP_TABLE))
            say(f"      CDC table {keyspace}.{SHOP_TABLE} created")
    return history


def _last_switch(history: list[dict[str, Any]]) -> datetime:
    return datetime.fromisoformat(history[-1]["generation"])


def emulate_across_switches(mode: SourceMode) -> Emulator:
    """Raft and V1: joins, then a workload that runs across the last generation switch."""

    def emulate(cluster: SandboxCluster, keyspace: str, nodes: int, say: Say) -> Emulated:
        history = _join_nodes(cluster, mode, nodes, keyspace, say)
        until = _last_switch(history) + AFTER_SWITCH
        writes = _workload(cluster, keyspace, until)
        say(f"      workload: {writes} writes to {keyspace}.{SHOP_TABLE}, across the last switch")
        return Emulated(mode, f"{keyspace}.{SHOP_TABLE}", history, writes, len(history))

    return emulate


def emulate_gossip(cluster: SandboxCluster, keyspace: str, nodes: int, say: Say) -> Emulated:
    """Gossip: joins, then a workload only inside the current (last) generation."""
    history = _join_nodes(cluster, SourceMode.GOSSIP, nodes, keyspace, say)
    current = _last_switch(history)
    wait = (current - datetime.now(UTC)).total_seconds()
    if wait > 0:
        say(f"      waiting {wait:.1f} s for the current generation to operate")
        time.sleep(wait + 0.2)
    writes = _workload(cluster, keyspace, datetime.now(UTC) + AFTER_SWITCH)
    say(f"      workload: {writes} writes to {keyspace}.{SHOP_TABLE}, in the current generation")
    # Gossip carries only the current generation's id: that is what a reader can find.
    return Emulated(SourceMode.GOSSIP, f"{keyspace}.{SHOP_TABLE}", history, writes, 1)


def emulate_tablets(cluster: SandboxCluster, keyspace: str, nodes: int, say: Say) -> Emulated:
    """Tablets: a CDC table's first stream set, a split, a workload across the split.

    Joins do not make generations here; ``nodes`` nodes join before the table exists.
    """
    from cdcgen_dev.emulator import create_cdc_table, orders_table, split_tablets
    from cdcgen_dev.emulator.tablets import tablet_stream_sets

    for seed in range(nodes):
        joined = cluster.join_node(SourceMode.TABLETS, seed=seed)
        say(f"      {joined.node.name} joined (tablets: no cluster-wide generation)")
    table = f"{keyspace}.{SHOP_TABLE}"
    create_cdc_table(cluster, orders_table(keyspace, SHOP_TABLE), tablets=TABLETS, seed=7)
    first = tablet_stream_sets(cluster, keyspace, SHOP_TABLE)[0]
    say(f"      CDC table {table} on {TABLETS} tablets: stream set {_iso(first.timestamp)}")
    split = split_tablets(cluster, keyspace, SHOP_TABLE, seed=8)
    streams = len(split.streams)
    say(f"      every tablet splits: stream set {_iso(split.timestamp)} ({streams} streams)")
    history = [
        {"event": event, "generation": _iso(s.timestamp), "streams": len(s.streams)}
        for event, s in (("created", first), ("split", split))
    ]
    writes = _workload(cluster, keyspace, split.timestamp + AFTER_SWITCH)
    say(f"      workload: {writes} writes to {table}, across the split")
    return Emulated(SourceMode.TABLETS, table, history, writes, len(history), {"cdc_tables": table})


def continue_across_switch(mode: SourceMode) -> Continuation:
    """Raft: one more node joins; the workload runs across its generation switch."""

    def more(cluster: SandboxCluster, keyspace: str, nodes: int, say: Say) -> MoreWrites:
        joined = cluster.join_node(mode, seed=nodes)
        assert joined.generation is not None
        switch = f"{joined.node.name} joined: generation {_iso(joined.generation.timestamp)}"
        say(f"      {switch}")
        writes = _workload(cluster, keyspace, joined.generation.timestamp + AFTER_SWITCH, 2)
        say(f"      workload: {writes} writes to {keyspace}.{SHOP_TABLE}, across the switch")
        return MoreWrites(writes, switch)

    return more


PLANS: dict[SourceMode, ModePlan] = {
    plan.mode: plan
    for plan in (
        ModePlan(
            SourceMode.RAFT,
            "raft topology: 3 nodes join, 3 generations, all found and published",
            3,
            emulate_across_switches(SourceMode.RAFT),
            continue_across_switch(SourceMode.RAFT),
        ),
        ModePlan(
            SourceMode.GOSSIP,
            "gossip topology: 3 nodes join; readers find only the current generation",
            3,
            emulate_gossip,
        ),
        ModePlan(
            SourceMode.V1,
            "ScyllaDB 4.3: 2 V1 generations published, rewritten to V2, published again",
            2,
            emulate_across_switches(SourceMode.V1),
        ),
        ModePlan(
            SourceMode.TABLETS,
            f"tablets: a CDC table on {TABLETS} tablets, then a split (2 stream sets published)",
            1,
            emulate_tablets,
        ),
    )
}


def plan_for(mode: str | SourceMode) -> ModePlan:
    """The plan of ``mode``; :class:`ValueError` naming the modes there are."""
    try:
        return PLANS[SourceMode(mode)]
    except ValueError:
        known = ", ".join(str(m) for m in PLANS)
        raise ValueError(f"unknown source mode {mode!r}: choose one of {known}") from None
