"""`cdcgen stream-id`: look inside CDC stream IDs.

``decode`` prints, per ID, one JSON object with its token, vnode index, version and
random bits, and (given the node's shard count) the shard owning its token, which is
what an operator needs to tell which node and vnode a CDC log partition belongs to.
"""

from __future__ import annotations

import argparse

from pydantic import BaseModel

from cdcgen.cli import add_json_flag, decimal, print_model
from cdcgen.cli.errors import CliError
from cdcgen.core.errors import InvalidSharding, InvalidStreamId
from cdcgen.core.stream_id import StreamId
from cdcgen.core.tokens import DEFAULT_IGNORE_MSB, check_sharding, shard_of


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "stream-id",
        help="decode CDC stream IDs",
        description="Inspect CDC stream IDs (16-byte cdc$stream_id values).",
    )
    commands = parser.add_subparsers(dest="stream_id_command", metavar="SUBCOMMAND", required=True)
    decode = commands.add_parser(
        "decode",
        help="print token, index, version, random bits (and shard) of stream IDs",
        description="Print one JSON object per stream ID (whether or not --json is given).",
    )
    decode.add_argument("stream_ids", nargs="+", metavar="HEX", help="32 hex digits, 0x optional")
    decode.add_argument(
        "--shards",
        type=decimal,
        default=None,
        help="shard count of the node; adds the shard owning each ID's token",
    )
    decode.add_argument(
        "--ignore-msb",
        type=decimal,
        default=DEFAULT_IGNORE_MSB,
        help=f"sharding ignore_msb bits of the node (default {DEFAULT_IGNORE_MSB})",
    )
    add_json_flag(decode)
    decode.set_defaults(func=decode_command)


class DecodedStreamId(BaseModel):
    """What ``decode`` prints for one stream ID (``shard``: with ``--shards`` only)."""

    stream_id: str
    token: int
    index: int
    version: int
    random: int
    shard: int | None


def describe(stream: StreamId, shards: int | None, ignore_msb: int) -> DecodedStreamId:
    """The fields ``decode`` prints for one stream ID."""
    return DecodedStreamId(
        stream_id=stream.hex,
        token=stream.token,
        index=stream.index,
        version=stream.version,
        random=stream.random,
        shard=None if shards is None else shard_of(stream.token, shards, ignore_msb),
    )


def decode_command(args: argparse.Namespace) -> int:
    if args.shards is not None:
        try:
            check_sharding(args.shards, args.ignore_msb)
        except InvalidSharding as exc:
            raise CliError(str(exc)) from exc
    streams = []
    # Parse everything first: either every ID is printed or none is.
    for text in args.stream_ids:
        try:
            streams.append(StreamId.from_hex(text))
        except InvalidStreamId as exc:
            raise CliError(f"invalid stream id {text!r}: {exc}") from exc
    for stream in streams:
        print_model(describe(stream, args.shards, args.ignore_msb))
    return 0
