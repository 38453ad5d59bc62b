"""`cdcgen sandbox <emulator command>`: play a ScyllaDB cluster's CDC side in the sandbox.

These commands write what a ScyllaDB cluster would write (generations in every source
mode, CDC log rows, node clocks) into the running sandbox Cassandra, under a keyspace
prefix (default ``sandbox_``, or ``$CDCGEN_SOURCE_KEYSPACE_PREFIX``). The group module
:mod:`cdcgen_dev.cli.sandbox` adds them with :func:`register_subcommands`.

A typical session::

    cdcgen sandbox up
    cdcgen sandbox join-node --mode raft            # first generation, starts now
    cdcgen sandbox create-table --keyspace demo
    cdcgen sandbox join-node --mode raft            # second one, ~65 s from now
    cdcgen sandbox workload --keyspace demo --duration 90
    cdcgen sandbox show

Each ``add_*`` function adds one parser and sets ``func``; each ``*_command`` takes the
parsed arguments and returns the exit status. User errors raise :class:`CliError`.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any, TypeAlias

from cdcgen.cli import decimal, finite
from cdcgen.cli.errors import CliError

if TYPE_CHECKING:
    from cdcgen.adapters.cql import CqlClient
    from cdcgen_dev.emulator.cluster import SandboxCluster

SubParsers: TypeAlias = "argparse._SubParsersAction[argparse.ArgumentParser]"

MODES = ("raft", "gossip", "v1", "tablets")


# --- shared options -----------------------------------------------------------------------


def _add_connection(parser: argparse.ArgumentParser, *, timing: bool = False) -> None:
    group = parser.add_argument_group("connection")
    group.add_argument(
        "--contact-points",
        default=None,
        metavar="HOSTS",
        help="comma-separated CQL hosts (default: $CDCGEN_CONTACT_POINTS or 127.0.0.1)",
    )
    group.add_argument("--port", type=decimal, default=None, help="CQL port (default: 9042)")
    group.add_argument(
        "--prefix",
        default=None,
        help="keyspace prefix the emulated ScyllaDB tables live under "
        "(default: $CDCGEN_SOURCE_KEYSPACE_PREFIX or sandbox_)",
    )
    if timing:
        group.add_argument(
            "--ring-delay",
            type=finite,
            default=None,
            metavar="SECONDS",
            help="ScyllaDB's ring_delay: a new generation starts 2*ring_delay+leeway after "
            "it is created (default: $CDCGEN_RING_DELAY_SECONDS or 30)",
        )
        group.add_argument(
            "--leeway",
            type=finite,
            default=None,
            metavar="SECONDS",
            help="generation_leeway: how far from its clock a coordinator accepts write "
            "timestamps (default: $CDCGEN_LEEWAY_SECONDS or 5)",
        )


@contextmanager
def _emulator(args: argparse.Namespace) -> Iterator[SandboxCluster]:
    """Connect and build the SandboxCluster; emulator and driver errors become CliErrors."""
    from cassandra import DriverException, InvalidRequest

    from cdcgen.adapters.cql import connect
    from cdcgen.adapters.errors import ConnectionFailed
    from cdcgen.errors import ConfigError
    from cdcgen_dev.emulator.cluster import SandboxCluster
    from cdcgen_dev.emulator.faults import FaultError
    from cdcgen_dev.emulator.state import EmulatorError
    from cdcgen_dev.sandbox import sandbox_config_from_env

    try:
        config = sandbox_config_from_env()
        overrides: dict[str, Any] = {}
        if args.contact_points:
            points = tuple(p.strip() for p in args.contact_points.split(",") if p.strip())
            overrides["contact_points"] = points
        if args.port:
            overrides["port"] = args.port
        if args.prefix is not None:
            overrides["source_keyspace_prefix"] = args.prefix
        if getattr(args, "ring_delay", None) is not None:
            overrides["ring_delay"] = timedelta(seconds=args.ring_delay)
        if getattr(args, "leeway", None) is not None:
            overrides["generation_leeway"] = timedelta(seconds=args.leeway)
        config = config.with_overrides(**overrides)
    except (ConfigError, ValueError) as exc:
        raise CliError(str(exc)) from exc
    try:
        client: CqlClient = connect(config.contact_points, config.port)
    except ConnectionFailed as exc:
        raise CliError(f"{exc} (is the sandbox up? `cdcgen sandbox up`)") from exc
    try:
        yield SandboxCluster.from_config(client, config)
    except (EmulatorError, FaultError, InvalidRequest) as exc:
        raise CliError(str(exc)) from exc
    except DriverException as exc:
        raise CliError(f"the cluster refused: {type(exc).__name__}: {exc}") from exc
    except ValueError as exc:  # invalid identifiers, shard counts, tablet counts, ...
        raise CliError(str(exc)) from exc
    finally:
        client.close()


def _print(data: Any) -> None:
    print(json.dumps(data, indent=2, default=str))


class _HelpFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """Shows real defaults only: None, False and [] mean "not given" and say nothing."""

    def _get_help_string(self, action: argparse.Action) -> str:
        if action.default in (None, False, []) or action.default is argparse.SUPPRESS:
            return action.help or ""
        return super()._get_help_string(action) or ""


def _parser(commands: SubParsers, name: str, summary: str, text: str) -> argparse.ArgumentParser:
    return commands.add_parser(name, help=summary, description=text, formatter_class=_HelpFormatter)


# --- join-node ------------------------------------------------------------------------------


def add_join_node(commands: SubParsers) -> None:
    parser = _parser(
        commands,
        "join-node",
        "add a simulated ScyllaDB node; it creates a new CDC generation",
        "Add a simulated node with random vnode tokens and write the new CDC generation "
        "its join creates, as a ScyllaDB cluster of the given --mode stores it: raft "
        "(system.cdc_generations_v3 + system.topology), gossip (cdc_generation_descriptions_v2 "
        "+ cdc_local), v1 (ScyllaDB 4.3's cdc_generation_descriptions + cdc_streams_descriptions) "
        "or tablets (no generation: tablets tables have per-table stream sets). The first "
        "generation starts now; later ones 2*ring_delay+leeway after the join. --fault "
        "corrupts or half-writes the generation to test readers.",
    )
    parser.add_argument("--mode", choices=MODES, default="raft", help="how generations are stored")
    parser.add_argument("--name", default=None, help="node name (default: nodeN)")
    parser.add_argument("--shards", type=decimal, default=2, help="shards (CPU cores) of the node")
    parser.add_argument(
        "--ignore-msb", type=decimal, default=12, help="murmur3_partitioner_ignore_msb_bits"
    )
    parser.add_argument("--vnodes", type=decimal, default=16, help="number of random tokens")
    parser.add_argument(
        "--seed", type=decimal, default=None, help="seed: reproducible tokens and IDs"
    )
    parser.add_argument(
        "--fault",
        action="append",
        default=[],
        metavar="KIND[:N]",
        help="missing-stream, duplicate-stream, ring-gap or bad-version on entry N; "
        "partial-rows:N (write only N rows); uncommitted (never commit the ID). Repeatable.",
    )
    _add_connection(parser, timing=True)
    parser.set_defaults(func=join_node_command)


def join_node_command(args: argparse.Namespace) -> int:
    from cdcgen.core.generation import SourceMode
    from cdcgen_dev.emulator.faults import FaultError, GenerationFault

    try:
        faults = [GenerationFault.parse(f) for f in args.fault]
    except FaultError as exc:
        raise CliError(str(exc)) from exc
    with _emulator(args) as cluster:
        result = cluster.join_node(
            SourceMode(args.mode),
            name=args.name,
            shards=args.shards,
            ignore_msb=args.ignore_msb,
            vnodes=args.vnodes,
            seed=args.seed,
            faults=faults,
        )
    output: dict[str, Any] = {
        "node": result.node.name,
        "address": result.node.address,
        "tokens": len(result.node.tokens),
        "shard_count": result.node.shard_count,
    }
    if result.generation is not None:
        generation = result.generation
        output["generation"] = {
            "timestamp": generation.timestamp.isoformat(timespec="milliseconds"),
            "id": generation.id,
            "mode": generation.mode,
            "committed": generation.committed,
            "loaded": generation.loaded,
            "faults": list(generation.faults),
            "starts_in_seconds": round(
                (generation.timestamp - datetime.now(UTC)).total_seconds(), 1
            ),
        }
        if result.description is not None:
            output["generation"]["ranges"] = len(result.description)
            output["generation"]["streams"] = result.description.stream_count()
    _print(output)
    return 0


# --- leave-node -----------------------------------------------------------------------------


def add_leave_node(commands: SubParsers) -> None:
    parser = _parser(
        commands,
        "leave-node",
        "decommission a simulated ScyllaDB node; no new CDC generation",
        "Remove a simulated node from the ring as a decommission does: in raft and tablets "
        "modes its system.topology row stays, 'left' and without tokens; in gossip and v1 "
        "modes it leaves system.peers. ScyllaDB makes no new generation when a node leaves: "
        "the operating one goes on, no longer optimal for the ring.",
    )
    parser.add_argument("name", help="the node to remove (nodeN)")
    parser.add_argument("--mode", choices=MODES, default="raft", help="how the ring is stored")
    _add_connection(parser)
    parser.set_defaults(func=leave_node_command)


def leave_node_command(args: argparse.Namespace) -> int:
    from cdcgen.core.generation import SourceMode

    with _emulator(args) as cluster:
        node = cluster.leave_node(args.name, SourceMode(args.mode))
    _print({"node": node.name, "left": True, "tokens": len(node.tokens)})
    return 0


# --- create-table ---------------------------------------------------------------------------


def add_create_table(commands: SubParsers) -> None:
    parser = _parser(
        commands,
        "create-table",
        "create a CDC-enabled table (pk int, ck int, v text, tags set<text>) and its log",
        "Create KEYSPACE.TABLE and TABLE_scylla_cdc_log with ScyllaDB's exact CDC log "
        "schema, as `WITH cdc = {'enabled': true, 'ttl': TTL}` does on ScyllaDB. With "
        "--tablets N the table behaves like one in a tablets keyspace: its own stream set "
        "of N streams (split/merge with split-tablets/merge-tablets).",
    )
    parser.add_argument("--keyspace", default=None, help="keyspace (default: <prefix>ks)")
    parser.add_argument("--table", default="orders", help="table name")
    parser.add_argument("--ttl", type=decimal, default=86_400, help="CDC TTL in seconds (0: none)")
    parser.add_argument(
        "--tablets", type=decimal, default=None, metavar="N", help="tablet count (a power of two)"
    )
    parser.add_argument("--seed", type=decimal, default=None, help="seed for tablet stream IDs")
    _add_connection(parser)
    parser.set_defaults(func=create_table_command)


def _keyspace(args: argparse.Namespace, cluster: SandboxCluster) -> str:
    return args.keyspace or f"{cluster.schema.keyspace_prefix}ks"


def create_table_command(args: argparse.Namespace) -> int:
    from cdcgen_dev.emulator.log_schema import orders_table
    from cdcgen_dev.emulator.tables import create_cdc_table

    with _emulator(args) as cluster:
        spec = orders_table(_keyspace(args, cluster), args.table, cdc_ttl=args.ttl)
        record = create_cdc_table(cluster, spec, tablets=args.tablets, seed=args.seed)
    _print(
        {
            "table": spec.qualified_table,
            "log_table": spec.qualified_log_table,
            "cdc_ttl": record.cdc_ttl,
            "tablets": record.tablet_count,
        }
    )
    return 0


# --- workload -------------------------------------------------------------------------------


def add_workload(commands: SubParsers) -> None:
    parser = _parser(
        commands,
        "workload",
        "write to a CDC table with its log rows, routed the way ScyllaDB would",
        "Write inserts, updates, row and partition deletes to KEYSPACE.TABLE for --duration "
        "seconds at --rate writes/s, each with its CDC log rows in the stream the generation "
        "operating at the write's timestamp maps its key to. Coordinators (simulated nodes "
        "that are up, round robin) apply ScyllaDB's acceptance rules with their own (skewed) "
        "clocks: refused writes are counted, not written. Prints a JSON report.",
    )
    parser.add_argument("--keyspace", default=None, help="keyspace (default: <prefix>ks)")
    parser.add_argument("--table", default="orders", help="a table made by create-table")
    parser.add_argument("--rate", type=finite, default=200.0, help="writes per second")
    parser.add_argument("--duration", type=finite, default=10.0, help="seconds to run")
    parser.add_argument("--keys", type=decimal, default=1000, help="distinct partition keys")
    parser.add_argument("--hot-keys", action="store_true", help="80%% of writes on 20%% of keys")
    parser.add_argument(
        "--timestamps",
        choices=("coordinator", "client"),
        default="coordinator",
        help="who stamps writes: the coordinator's clock, or the client's (+ --client-skew)",
    )
    parser.add_argument(
        "--client-skew", type=finite, default=0.0, metavar="SECONDS", help="client clock offset"
    )
    parser.add_argument("--coordinator", default=None, help="send every write via this node")
    parser.add_argument(
        "--misroute", type=finite, default=0.0, metavar="FRACTION", help="fault: wrong streams"
    )
    parser.add_argument("--seed", type=decimal, default=None, help="seed: reproducible writes")
    _add_connection(parser, timing=True)
    parser.set_defaults(func=workload_command)


def workload_command(args: argparse.Namespace) -> int:
    from cdcgen_dev.emulator.workload import WorkloadSpec, run_workload

    with _emulator(args) as cluster:
        spec = WorkloadSpec(
            keyspace=_keyspace(args, cluster),
            table=args.table,
            rate=args.rate,
            duration=timedelta(seconds=args.duration),
            keys=args.keys,
            hot_keys=args.hot_keys,
            timestamps=args.timestamps,
            client_skew=timedelta(seconds=args.client_skew),
            coordinator=args.coordinator,
            misroute_fraction=args.misroute,
            seed=args.seed,
        )
        report = run_workload(cluster, spec)
    _print(report.to_json())
    return 1 if report.failed else 0


# --- clocks and nodes -----------------------------------------------------------------------


def add_skew_clock(commands: SubParsers) -> None:
    parser = _parser(
        commands,
        "skew-clock",
        "set a simulated node's clock offset",
        "Make NODE's clock run --seconds ahead (negative: behind) of the host's. Its writes "
        "get timestamps from that clock, and clock readers report it: a lagging node keeps "
        "writing to an old generation after the switch, which is why consumers must wait "
        "for every node's clock.",
    )
    parser.add_argument("node", help="simulated node name, e.g. node2")
    parser.add_argument("--seconds", type=finite, required=True, help="offset in seconds")
    _add_connection(parser)
    parser.set_defaults(func=skew_clock_command)


def skew_clock_command(args: argparse.Namespace) -> int:
    with _emulator(args) as cluster:
        node = cluster.set_clock_skew(args.node, timedelta(seconds=args.seconds))
    _print({"node": node.name, "clock_skew_seconds": node.clock_skew.total_seconds()})
    return 0


def add_mark_node(commands: SubParsers) -> None:
    parser = _parser(
        commands,
        "mark-node",
        "mark a simulated node down (or up again)",
        "A node marked down coordinates no writes and its clock cannot be read, like a "
        "stopped ScyllaDB node (on the 3-node sandbox, stopping the Cassandra process behind "
        "it has the same effect on clock reads).",
    )
    parser.add_argument("node", help="simulated node name")
    state = parser.add_mutually_exclusive_group(required=True)
    state.add_argument("--down", action="store_true", help="mark it down")
    state.add_argument("--up", action="store_true", help="mark it up")
    _add_connection(parser)
    parser.set_defaults(func=mark_node_command)


def mark_node_command(args: argparse.Namespace) -> int:
    with _emulator(args) as cluster:
        node = cluster.set_node_up(args.node, bool(args.up))
    _print({"node": node.name, "up": node.up})
    return 0


def add_clocks(commands: SubParsers) -> None:
    parser = _parser(
        commands,
        "clocks",
        "read every simulated node's clock",
        "Print each simulated node's clock (its host's `totimestamp(now())` plus its skew), "
        "or why it cannot be read.",
    )
    _add_connection(parser)
    parser.set_defaults(func=clocks_command)


def clocks_command(args: argparse.Namespace) -> int:
    from cdcgen_dev.emulator.clocks import SandboxClockReader

    with _emulator(args) as cluster:
        clocks = SandboxClockReader(cluster.client, cluster.schema).read_clocks()
    _print([{"node": c.node, "clock": c.clock, "error": c.error} for c in clocks])
    return 0 if all(c.clock is not None for c in clocks) else 1


# --- V1 rewrite and tablets -----------------------------------------------------------------


def add_rewrite_v1(commands: SubParsers) -> None:
    parser = _parser(
        commands,
        "rewrite-v1",
        "run the ScyllaDB 4.3 -> 4.4 rewrite (V1 descriptions to V2) and mark it done",
        "Copy every V1 generation that CDC tables may still hold rows of to "
        "cdc_streams_descriptions_v2 and cdc_generation_timestamps, then write "
        "system.cdc_local key='rewritten'. From then on readers use the V2 tables.",
    )
    parser.add_argument(
        "--marker-only", action="store_true", help="only write the 'rewritten' marker"
    )
    _add_connection(parser)
    parser.set_defaults(func=rewrite_v1_command)


def rewrite_v1_command(args: argparse.Namespace) -> int:
    from cdcgen_dev.emulator.rewrite import rewrite_v1

    with _emulator(args) as cluster:
        report = rewrite_v1(cluster, marker_only=args.marker_only)
    _print(
        {
            "status": report.status,
            "rewritten": report.rewritten,
            "too_old": report.too_old,
            "already_present": report.already_present,
        }
    )
    return 0


def _add_resize(commands: SubParsers, name: str, split: bool) -> None:
    what = "split every tablet in two" if split else "merge tablets in pairs"
    parser = _parser(
        commands,
        name,
        f"{what}: a new stream set for a tablets table",
        f"{what.capitalize()} of KEYSPACE.TABLE (made with create-table --tablets). Every "
        "stream is replaced; the new set starts 2*ring_delay+leeway from now.",
    )
    parser.add_argument("--keyspace", default=None, help="keyspace (default: <prefix>ks)")
    parser.add_argument("--table", default="orders", help="table name")
    parser.add_argument("--seed", type=decimal, default=None, help="seed for the new stream IDs")
    _add_connection(parser, timing=True)
    parser.set_defaults(func=resize_command, split=split)


def add_split_tablets(commands: SubParsers) -> None:
    _add_resize(commands, "split-tablets", True)


def add_merge_tablets(commands: SubParsers) -> None:
    _add_resize(commands, "merge-tablets", False)


def resize_command(args: argparse.Namespace) -> int:
    from cdcgen_dev.emulator.tablets import resize_tablets

    with _emulator(args) as cluster:
        stream_set = resize_tablets(
            cluster, _keyspace(args, cluster), args.table, split=args.split, seed=args.seed
        )
    _print(
        {
            "timestamp": stream_set.timestamp.isoformat(timespec="milliseconds"),
            "streams": len(stream_set.streams),
        }
    )
    return 0


# --- show -----------------------------------------------------------------------------------


def add_show(commands: SubParsers) -> None:
    parser = _parser(
        commands,
        "show",
        "list the simulated nodes, generations and CDC tables",
        "Print the emulator's state as JSON: nodes (tokens, shards, clock skew, up/down), "
        "every generation the simulated nodes know (committed? loaded? faults) and the CDC "
        "tables with their stream sets.",
    )
    _add_connection(parser)
    parser.set_defaults(func=show_command)


def show_command(args: argparse.Namespace) -> int:
    from cdcgen_dev.emulator.state import load_cdc_tables, tablets_scope

    with _emulator(args) as cluster:
        cluster.setup()
        nodes = cluster.nodes()
        generations = cluster.generations()
        tables = load_cdc_tables(cluster.client, cluster.schema)
        sets = {
            f"{t.keyspace}.{t.table}": cluster.generations(tablets_scope(t.keyspace, t.table))
            for t in tables
        }

    def generation(g: Any) -> dict[str, Any]:
        return {
            "timestamp": g.timestamp.isoformat(timespec="milliseconds"),
            "id": g.id,
            "mode": g.mode,
            "committed": g.committed,
            "loaded": g.loaded,
            "faults": list(g.faults),
        }

    _print(
        {
            "prefix": cluster.schema.keyspace_prefix,
            "nodes": [
                {
                    "name": n.name,
                    "address": n.address,
                    "up": n.up,
                    "shard_count": n.shard_count,
                    "ignore_msb": n.ignore_msb,
                    "tokens": len(n.tokens),
                    "clock_skew_seconds": n.clock_skew.total_seconds(),
                }
                for n in nodes
            ],
            "generations": [generation(g) for g in generations],
            "cdc_tables": [
                {
                    "table": f"{t.keyspace}.{t.table}",
                    "cdc_ttl": t.cdc_ttl,
                    "tablets": t.tablet_count,
                    "stream_sets": [generation(g) for g in sets[f"{t.keyspace}.{t.table}"]],
                }
                for t in tables
            ],
        }
    )
    return 0


# --- registration ---------------------------------------------------------------------------

SUBCOMMANDS: tuple[Callable[[SubParsers], None], ...] = (
    add_join_node,
    add_leave_node,
    add_create_table,
    add_workload,
    add_skew_clock,
    add_mark_node,
    add_clocks,
    add_rewrite_v1,
    add_split_tablets,
    add_merge_tablets,
    add_show,
)
"""Every emulator subcommand, in --help order."""


def register_subcommands(subparsers: SubParsers) -> None:
    """Add the emulator's subcommands to the ``cdcgen sandbox`` group's subparsers."""
    for add_subcommand in SUBCOMMANDS:
        add_subcommand(subparsers)


__all__ = ["SUBCOMMANDS", "register_subcommands"]
