"""`cdcgen generation`: build and query CDC generations offline.

``build`` turns a topology file (nodes, shard counts, tokens) into the topology
description ScyllaDB would make for it; ``lookup`` maps partition tokens to streams
with a description file.

To add a subcommand (validate, publish, list, ...), write an ``add_<name>(commands)``
function that adds its parser to ``commands`` and sets ``func``, then append it to
:data:`SUBCOMMANDS`. Each subcommand is one ``add_*`` function plus one ``*_command``
function taking the parsed arguments and returning the exit status.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from collections.abc import Callable
from typing import TypeAlias

from pydantic import BaseModel

from cdcgen.cli import add_json_flag, decimal, print_model, read_json_file
from cdcgen.cli.errors import CliError
from cdcgen.core.errors import InvalidDescription, InvalidToken, InvalidTopology
from cdcgen.core.generation_arrays import build_generation_arrays
from cdcgen.core.tokens import parse_token
from cdcgen.core.topology import TopologyDescription
from cdcgen.core.topology_json import description_from_json, nodes_from_json

SubParsers: TypeAlias = "argparse._SubParsersAction[argparse.ArgumentParser]"


def load_description(path: str) -> TopologyDescription:
    try:
        return description_from_json(read_json_file(path, "description"))
    except InvalidDescription as exc:
        raise CliError(f"description file {path}: {exc}") from exc


# --- build ----------------------------------------------------------------------------


def add_build(commands: SubParsers) -> None:
    parser = commands.add_parser(
        "build",
        help="make a generation from a topology file",
        description="Print the topology description (JSON) ScyllaDB's "
        "make_new_generation_description gives for the nodes in FILE.",
    )
    parser.add_argument(
        "--topology", required=True, metavar="FILE", help="topology JSON ('-': stdin)"
    )
    parser.add_argument(
        "--seed", type=decimal, default=None, help="seed for the random bits (reproducible IDs)"
    )
    parser.set_defaults(func=build_command)


def build_command(args: argparse.Namespace) -> int:
    try:
        nodes = nodes_from_json(read_json_file(args.topology, "topology"))
        # The vectorized builder gives the same streams as make_generation, much faster.
        arrays = build_generation_arrays(nodes, random.Random(args.seed))
    except InvalidTopology as exc:
        raise CliError(f"topology file {args.topology}: {exc}") from exc
    json.dump(arrays.description_json(), sys.stdout)
    sys.stdout.write("\n")
    return 0


# --- lookup ---------------------------------------------------------------------------


def add_lookup(commands: SubParsers) -> None:
    parser = commands.add_parser(
        "lookup",
        help="print the stream of each token",
        description="Print, one per line, the stream ID each partition TOKEN's writes go to.",
    )
    parser.add_argument("--description", required=True, metavar="FILE", help="description JSON")
    parser.add_argument("tokens", nargs="+", metavar="TOKEN", help="signed 64-bit token")
    add_json_flag(parser)
    parser.set_defaults(func=lookup_command)


class TokenStream(BaseModel):
    """The stream a partition token's writes go to (a line of ``lookup --json``)."""

    token: int
    stream_id: str


def lookup_command(args: argparse.Namespace) -> int:
    try:
        tokens = [parse_token(text) for text in args.tokens]
    except InvalidToken as exc:
        raise CliError(str(exc)) from None
    description = load_description(args.description)
    for token in tokens:
        stream = description.get_stream(token).hex
        if args.json:
            print_model(TokenStream(token=token, stream_id=stream))
        else:
            print(stream)
    return 0


SUBCOMMANDS: tuple[Callable[[SubParsers], None], ...] = (add_build, add_lookup)
"""Every ``generation`` subcommand, in --help order."""


def register(subparsers: SubParsers) -> None:
    parser = subparsers.add_parser(
        "generation",
        help="build, look up, validate and publish CDC generations",
        description="Work with CDC generations (vnode keyspaces).",
    )
    commands = parser.add_subparsers(dest="generation_command", metavar="SUBCOMMAND", required=True)
    for add_subcommand in SUBCOMMANDS:
        add_subcommand(commands)
    # validate/publish need Spark, GX and the driver, imported only when they run.
    from cdcgen.cli.generation_ops import register_subcommands

    register_subcommands(commands)
