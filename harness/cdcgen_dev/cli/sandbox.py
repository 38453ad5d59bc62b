"""`cdcgen sandbox`: run a real Cassandra locally for development, tests and the demo.

``up``, ``down``, ``status`` and ``fetch`` manage the Cassandra processes and jars
only (see :mod:`cdcgen_dev.cassandra`); the CDC emulator gets its own subcommands.

To add a subcommand (join-node, workload, ...), write an ``add_<name>(commands)``
function that adds its parser with :func:`add_parser` (same help layout as the
others) and sets ``func``, then append it to :data:`SUBCOMMANDS`. Each subcommand
is one ``add_*`` function plus one ``*_command`` function taking the parsed
arguments and returning the exit status. Raise :class:`cdcgen.cli.errors.CliError` for
user errors; :func:`sandbox_errors` turns a
:class:`~cdcgen_dev.cassandra.SandboxError` into one.
"""

from __future__ import annotations

import argparse
import json
import sys
import textwrap
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TypeAlias

from cdcgen.cli import decimal, finite
from cdcgen.cli.errors import CliError

SubParsers: TypeAlias = "argparse._SubParsersAction[argparse.ArgumentParser]"
Parser: TypeAlias = argparse.ArgumentParser

_ENVIRONMENT = """\
environment:
  CDCGEN_SANDBOX_DIR            data, logs, pid files (default <repo>/var/cassandra)
  CDCGEN_CACHE_DIR              jar cache root (default ~/.cache/cdcgen)
  CDCGEN_CASSANDRA_HEAP         maximum heap per node (default 1G)
  CDCGEN_SANDBOX_START_TIMEOUT  seconds `up` waits for readiness (default 240)
  JAVA_HOME                     the Java 17 to use (default: java on PATH)
"""


def add_parser(commands: SubParsers, name: str, *, help: str, description: str) -> Parser:
    """Add a sandbox subcommand parser: wrapped description, environment epilog.

    RawDescriptionHelpFormatter keeps the epilog's table; the description is
    wrapped here because that formatter no longer does it.
    """
    return commands.add_parser(
        name,
        help=help,
        description=textwrap.fill(description, width=78, break_on_hyphens=False),
        epilog=_ENVIRONMENT,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )


@contextmanager
def sandbox_errors() -> Iterator[None]:
    """Print a SandboxError's details (e.g. the node's log tail), re-raise as CliError."""
    # Imported here: every cdcgen command loads this module (its entry point), and the
    # sandbox package brings cassandra-driver, a cost to every command's start-up.
    from cdcgen_dev.cassandra import SandboxError

    try:
        yield
    except SandboxError as exc:
        if exc.details:
            print(exc.details, file=sys.stderr)
        raise CliError(str(exc)) from exc


# --- up -------------------------------------------------------------------------------


def add_up(commands: SubParsers) -> None:
    parser = add_parser(
        commands,
        "up",
        help="start Cassandra (1 node, or a 3-node cluster) and wait until it serves CQL",
        description=(
            "Start Apache Cassandra from Maven Central jars and wait until CQL "
            "answers. --nodes 1 (default) runs one node on 127.0.0.1:9042; --nodes 3 runs "
            "a cluster on 127.0.0.1, 127.0.0.2 and 127.0.0.3 (port 9042 each) for replica, "
            "node-failure and datacenter tests: two datacenters, dc1 (nodes 1 and 2) and dc2 "
            "(node 3). Only one of the two can run at a time. --second runs "
            "another, independent one-node cluster on 127.0.0.2:9042 beside the single node "
            "(not beside the 3-node cluster, which uses that address). The first run "
            "downloads the jars with Maven (about a minute). Nodes keep running after this "
            "command exits; running it again just reports them."
        ),
    )
    parser.add_argument(
        "--nodes", type=decimal, choices=(1, 3), default=1, help="how many nodes (default: 1)"
    )
    parser.add_argument(
        "--second",
        action="store_true",
        help="the second one-node cluster (127.0.0.2), e.g. a replication sink",
    )
    parser.add_argument(
        "--fresh", action="store_true", help="stop and delete this sandbox's data first"
    )
    parser.add_argument(
        "--auth",
        action="store_true",
        help="the secure node (127.0.0.9): PasswordAuthenticator, a generated cdcgen login",
    )
    parser.add_argument(
        "--tls",
        action="store_true",
        help="the secure node (127.0.0.9): client encryption with a generated CA",
    )
    parser.add_argument(
        "--timeout",
        type=finite,
        default=None,
        metavar="SECONDS",
        help="give up waiting for readiness after this long (default: 240)",
    )
    parser.set_defaults(func=up_command)


def up_command(args: argparse.Namespace) -> int:
    from cdcgen_dev.cassandra import Sandbox
    from cdcgen_dev.cassandra.cluster import DEFAULT_START_TIMEOUT
    from cdcgen_dev.cassandra.sharing import claim_for_user

    if args.auth or args.tls:
        return secure_up(args)
    if args.second and args.nodes != 1:
        raise CliError("--second runs one node; --nodes does not apply")
    sandbox = Sandbox("second" if args.second else args.nodes)
    with sandbox_errors():
        result = sandbox.up(fresh=args.fresh, timeout=args.timeout or DEFAULT_START_TIMEOUT)
    # Started by a person now: test sessions reuse it and leave it running.
    claim_for_user(sandbox.topology.name, sandbox.state_dir)
    if result.started:
        print(f"started {', '.join(result.started)} in {result.seconds:.0f}s")
    if result.already_running:
        print(f"already running: {', '.join(result.already_running)}")
    print(f"Cassandra {result.topology} ready; CQL at {', '.join(result.contact_points)} port 9042")
    return 0


def secure_up(args: argparse.Namespace) -> int:
    """The secure node, beside the open sandbox; prints where its credentials are."""
    from cdcgen_dev.cassandra.secure import SecureSandbox

    if args.nodes != 1 or args.fresh or args.second:
        raise CliError("--auth/--tls run one node; --nodes, --second and --fresh do not apply")
    with sandbox_errors():
        endpoint = SecureSandbox(auth=args.auth, tls=args.tls).up(timeout=args.timeout or 240.0)
    print(f"secure Cassandra ready; CQL at {endpoint.contact_points[0]} port {endpoint.port}")
    if endpoint.password_file is not None:
        print(f"login: cdcgen, password in {endpoint.password_file} (readable by you only)")
    if endpoint.tls is not None:
        print(f"TLS: trust {endpoint.tls.ca}; client certificate {endpoint.tls.client_cert}")
    print("the pipeline's settings (export them, or set them on the cdc_source connection):")
    for name, value in endpoint.env().items():
        print(f"  export {name}={value}")
    return 0


# --- down -----------------------------------------------------------------------------


def add_down(commands: SubParsers) -> None:
    parser = add_parser(
        commands,
        "down",
        help="stop every sandbox Cassandra node (--wipe also deletes their data)",
        description=(
            "Stop all sandbox Cassandra nodes, single node, cluster and second alike "
            "(SIGTERM, then SIGKILL after --timeout). Data is kept for the next `up` "
            "unless --wipe is given."
        ),
    )
    parser.add_argument("--wipe", action="store_true", help="also delete all sandbox data")
    parser.add_argument(
        "--timeout",
        type=finite,
        default=30.0,
        metavar="SECONDS",
        help="wait this long for an orderly shutdown before killing (default: 30)",
    )
    parser.set_defaults(func=down_command)


def down_command(args: argparse.Namespace) -> int:
    from cdcgen_dev.cassandra import down_all
    from cdcgen_dev.cassandra.leases import lessees
    from cdcgen_dev.cassandra.topology import ALL_TOPOLOGIES, default_state_dir

    users = sorted({pid for name in ALL_TOPOLOGIES for pid in lessees(default_state_dir(), name)})
    if users:
        print(f"note: test session pid(s) {users} were using the sandbox", file=sys.stderr)
    with sandbox_errors():
        stopped = down_all(wipe=args.wipe, timeout=args.timeout)
    print(f"stopped {', '.join(stopped)}" if stopped else "no sandbox node was running")
    if args.wipe:
        print("sandbox data deleted")
    return 0


# --- status ---------------------------------------------------------------------------


def add_status(commands: SubParsers) -> None:
    parser = add_parser(
        commands,
        "status",
        help="report each sandbox node as JSON (pid, alive, CQL port open, uptime, memory)",
        description=(
            "Print JSON describing the sandbox: its state dir, the Cassandra "
            'version, whether the jars are fetched, which topology is "running" (null if '
            'none), which test sessions (pids) are using each topology ("leased_by") '
            'and, under "nodes", every node that has a directory: pid, alive, '
            "datacenter, cql_port_open, uptime_s, rss_mb and its log file. Exit status 0 "
            "either way."
        ),
    )
    parser.set_defaults(func=status_command)


def status_command(args: argparse.Namespace) -> int:
    from cdcgen_dev.cassandra import status_report

    with sandbox_errors():
        report = status_report()
    print(json.dumps(report, indent=2))
    return 0


# --- fetch ----------------------------------------------------------------------------


def add_fetch(commands: SubParsers) -> None:
    parser = add_parser(
        commands,
        "fetch",
        help="download Cassandra's jars from Maven Central (done by `up` when needed)",
        description=(
            "Fetch cassandra-all and its runtime jars with Maven into the cache "
            "(~/.cache/cdcgen/cassandra-<version>/lib) and print that directory. "
            "Nothing happens if they are already there. `up` does this itself; run it "
            "separately to warm a CI cache or to time the download."
        ),
    )
    parser.set_defaults(func=fetch_command)


def fetch_command(args: argparse.Namespace) -> int:
    from cdcgen_dev.cassandra import ensure_jars

    with sandbox_errors():
        print(ensure_jars())
    return 0


# --- group ----------------------------------------------------------------------------

SUBCOMMANDS: tuple[Callable[[SubParsers], None], ...] = (add_up, add_down, add_status, add_fetch)
"""Every ``sandbox`` subcommand, in --help order."""


def register(subparsers: SubParsers) -> None:
    parser = subparsers.add_parser(
        "sandbox",
        help="run a local Apache Cassandra (1 node or 3) for development and tests",
        description="Manage the local sandbox: a real Apache Cassandra 5.0 run from "
        "Maven Central jars on Java 17 (no Docker needed). Start with "
        "`cdcgen sandbox up`, inspect with `cdcgen sandbox status`, stop with "
        "`cdcgen sandbox down`.",
    )
    commands = parser.add_subparsers(dest="sandbox_command", metavar="SUBCOMMAND", required=True)
    for add_subcommand in SUBCOMMANDS:
        add_subcommand(commands)
    # The emulator (join-node, workload, ...) plays ScyllaDB's CDC side on this Cassandra.
    from cdcgen_dev.cli.sandbox_emulator import register_subcommands

    register_subcommands(commands)
