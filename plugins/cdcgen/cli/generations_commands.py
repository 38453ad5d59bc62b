"""`cdcgen generations list`: what the source has committed and what the target publishes.

One JSON object per line, oldest first, so the output pipes into ``jq`` or a test:

    {"kind": "source", "timestamp": "...", "timestamp_ms": ..., "id": "...", "published": true}
    {"kind": "published", "timestamp": "...", "timestamp_ms": ..., "expired": null}

A source generation with ``"published": false`` is one the pipeline still has to publish.
The output is JSON whether or not ``--json`` is given (scripts may say it).
"""

from __future__ import annotations

import argparse
from datetime import datetime
from typing import TYPE_CHECKING, Literal, TypeAlias, TypedDict

from pydantic import BaseModel

from cdcgen.cli import add_json_flag, decimal
from cdcgen.cli.errors import CliError
from cdcgen.cli.generation_ops import connection_config, print_json_line
from cdcgen.core.time import iso_millis, to_millis

if TYPE_CHECKING:
    from cdcgen.adapters.cql import CqlClient
    from cdcgen.config import PipelineConfig
    from cdcgen.core.generation import Generation

SubParsers: TypeAlias = "argparse._SubParsersAction[argparse.ArgumentParser]"


def register(subparsers: SubParsers) -> None:
    parser = subparsers.add_parser(
        "generations",
        help="list source and published CDC generations",
        description="Inspect the generations of a running cluster.",
    )
    commands = parser.add_subparsers(
        dest="generations_command", metavar="SUBCOMMAND", required=True
    )
    add_list(commands)


def add_list(commands: SubParsers) -> None:
    parser = commands.add_parser(
        "list",
        help="print source and published generations as JSON lines",
        description="Print the source's committed generations and the target's published "
        "ones (cdc_generation_timestamps), one JSON object per line.",
    )
    which = parser.add_mutually_exclusive_group()
    which.add_argument("--published-only", action="store_true", help="skip the source")
    which.add_argument("--source-only", action="store_true", help="skip the target")
    parser.add_argument("--keyspace", help="target keyspace (default: $CDCGEN_TARGET_KEYSPACE)")
    parser.add_argument("--contact-points", nargs="+", metavar="HOST", help="CQL nodes")
    parser.add_argument("--port", type=decimal, help="CQL port")
    add_json_flag(parser)
    parser.set_defaults(func=list_command)


class SourceGeneration(BaseModel):
    """A generation the source has committed (``table``: a tablets stream set's table;
    ``published``: absent with ``--source-only``)."""

    kind: Literal["source"] = "source"
    timestamp: str
    timestamp_ms: int
    id: str
    table: str | None = None
    published: bool | None = None


class PublishedGeneration(BaseModel):
    """A generation the target publishes, and when it expired (None: current)."""

    kind: Literal["published"] = "published"
    timestamp: str
    timestamp_ms: int
    expired: str | None
    keyspace: str


def list_command(args: argparse.Namespace) -> int:
    from cassandra import DriverException

    from cdcgen.adapters.cql import client_for
    from cdcgen.adapters.errors import ConnectionFailed
    from cdcgen.core.errors import MetadataError

    config = connection_config(args)
    try:
        with client_for(config) as client:
            published = {} if args.source_only else _published(client, config)
            source = [] if args.published_only else _source(client, config)
    except ConnectionFailed as exc:
        raise CliError(str(exc)) from exc
    except (DriverException, MetadataError) as exc:
        raise CliError(
            f"cannot list generations (source mode {config.source_mode}, keyspace prefix "
            f"{config.source_keyspace_prefix!r}, target {config.target_keyspace}): {exc}"
        ) from exc
    for generation in source:
        line = SourceGeneration(
            **_when(generation.timestamp),
            id=generation.id,
            table=generation.table or None,
            published=None if args.source_only else generation.timestamp in published,
        )
        print_json_line(line.model_dump(exclude_none=True))  # keys sorted, as always
    for moment, expired in sorted(published.items()):
        stamp = expired.isoformat(timespec="milliseconds") if expired else None
        done = PublishedGeneration(**_when(moment), expired=stamp, keyspace=config.target_keyspace)
        print_json_line(done.model_dump())
    return 0


def _published(client: CqlClient, config: PipelineConfig) -> dict[datetime, datetime | None]:
    from cdcgen.adapters.publisher import CqlDescriptionPublisher

    generations = CqlDescriptionPublisher(client, config).published_generations()
    return {g.time: g.expired for g in generations}


def _source(client: CqlClient, config: PipelineConfig) -> list[Generation]:
    from cdcgen.adapters.generation_sources import source_for

    return sorted(source_for(client, config).list_generations())


class _Moment(TypedDict):
    timestamp: str
    timestamp_ms: int


def _when(moment: datetime) -> _Moment:
    return _Moment(timestamp=iso_millis(moment), timestamp_ms=to_millis(moment))
