"""`cdcgen generation validate` and `cdcgen generation publish`.

``validate`` runs the very suites the pipeline runs (Great Expectations) on a
description file: exit 0 when valid, 1 with each failed check named (and offending
streams) when not. ``publish`` writes a description to the user-facing tables: streams
first, timestamp last, refusing to overwrite different streams.

Added to the ``generation`` group by :func:`register_subcommands`; Spark, GX and the
driver are imported only when a command runs.
"""

from __future__ import annotations

import argparse
import json
import sys
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeAlias

from cdcgen.cli import CliError, decimal, read_json_file

if TYPE_CHECKING:
    from cdcgen.config import PipelineConfig
    from cdcgen.core.topology import Node, TopologyDescription
    from cdcgen.extract.description_columns import DescriptionColumns
    from cdcgen.extract.lake import GenerationArtifact

SubParsers: TypeAlias = "argparse._SubParsersAction[argparse.ArgumentParser]"

EXIT_INVALID = 1


def register_subcommands(generation_subparsers: SubParsers) -> None:
    """Add ``validate`` and ``publish`` to the ``generation`` group's subparsers."""
    add_validate(generation_subparsers)
    add_publish(generation_subparsers)


# --- validate -------------------------------------------------------------------------


def add_validate(commands: SubParsers) -> None:
    parser = commands.add_parser(
        "validate",
        help="check a description with the pipeline's Great Expectations suites",
        description="Validate a topology description (JSON) with the coverage, format and "
        "colocation suites. Exit 0 if valid; 1 with each failed check named if not.",
    )
    parser.add_argument("file", metavar="FILE", help="description JSON")
    parser.add_argument(
        "--topology",
        metavar="TOPO",
        help="topology JSON the generation was made for "
        "(enables the optimality checks: entry count, ring tokens, shard counts)",
    )
    parser.add_argument(
        "--previous",
        metavar="FILE",
        help="previous generation's description JSON or lake "
        "partition (enables the stream ID reuse check)",
    )
    parser.add_argument(
        "--report",
        metavar="DIR",
        help="where to write the Data Docs (default: $CDCGEN_REPORT_DIR/validate-<file name>)",
    )
    parser.add_argument("--timestamp", metavar="ISO", help="generation timestamp, for the report")
    parser.add_argument(
        "--id", dest="generation_id", default="", help="generation id, for the report"
    )
    parser.set_defaults(func=validate_command)


def validate_command(args: argparse.Namespace) -> int:
    """Validate a description file; Spark starts only if the Spark engine is chosen
    (``CDCGEN_VALIDATION_ENGINE``; by default only for descriptions too big for SQLite)."""
    from cdcgen.config import PipelineConfig
    from cdcgen.validation.docs_folder import ReportFolderError, check_docs_folder
    from cdcgen.validation.generation_suite import validate_description
    from cdcgen.validation.gx_runner import start_gx_import

    start_gx_import()  # while the files are read
    columns = load_columns(args.file)
    nodes = load_nodes(args.topology) if args.topology else None
    previous: Any = None
    if args.previous:
        path = Path(args.previous)
        previous = load_artifact(path) if path.is_dir() else load_columns(args.previous)
    config = PipelineConfig.from_env()
    report = (
        Path(args.report) if args.report else config.report_dir / f"validate-{Path(args.file).stem}"
    )
    try:
        check_docs_folder(report)  # before any work; checked again where it is replaced
    except ReportFolderError as exc:
        raise CliError(str(exc)) from None
    result = validate_description(
        None,
        columns,
        report_dir=report,
        nodes=nodes,
        previous=previous,
        timestamp=parse_timestamp(args.timestamp) if args.timestamp else None,
        generation_id=args.generation_id or Path(args.file).stem,
        config=config,
    )
    print(result.summary)
    return 0 if result.passed else EXIT_INVALID


# --- publish --------------------------------------------------------------------------


def add_publish(commands: SubParsers) -> None:
    parser = commands.add_parser(
        "publish",
        help="publish a description to cdc_streams_descriptions_v2 + cdc_generation_timestamps",
        description="Write the description's rows to the streams table, then (only if all "
        "succeeded) the timestamp row. Idempotent; refuses different streams for a published "
        "timestamp.",
    )
    parser.add_argument(
        "--description",
        required=True,
        metavar="FILE",
        help="description JSON, or an extracted lake partition directory (hash-checked)",
    )
    parser.add_argument("--timestamp", required=True, metavar="ISO", help="generation timestamp")
    parser.add_argument("--keyspace", help="target keyspace (default: $CDCGEN_TARGET_KEYSPACE)")
    parser.add_argument(
        "--contact-points",
        nargs="+",
        metavar="HOST",
        help="CQL nodes (default: $CDCGEN_CONTACT_POINTS)",
    )
    parser.add_argument("--port", type=decimal, help="CQL port (default: $CDCGEN_PORT or 9042)")
    parser.set_defaults(func=publish_command)


def publish_command(args: argparse.Namespace) -> int:
    from cdcgen.adapters.cql import client_for
    from cdcgen.adapters.errors import ConnectionFailed
    from cdcgen.adapters.publisher import CqlDescriptionPublisher, PublishError

    timestamp = parse_timestamp(args.timestamp)
    description = load_strict_description(args.description)
    config = connection_config(args)
    try:
        with client_for(config) as client:
            rows = CqlDescriptionPublisher(client, config).publish(timestamp, description)
    except PublishError as exc:
        raise CliError(str(exc)) from exc
    except ConnectionFailed as exc:
        raise CliError(str(exc)) from exc
    print(
        json.dumps(
            {
                "published": timestamp.isoformat(timespec="milliseconds"),
                "keyspace": config.target_keyspace,
                "rows": rows,
                "streams": description.stream_count(),
            }
        )
    )
    return 0


# --- shared helpers (also used by `cdcgen generations`) --------------------------------


def connection_config(args: argparse.Namespace) -> PipelineConfig:
    """``PipelineConfig.from_env()`` with the command line's connection options applied."""
    from cdcgen.config import ConfigError, PipelineConfig

    try:
        config = PipelineConfig.from_env()
        changes: dict[str, Any] = {}
        if getattr(args, "keyspace", None):
            changes["target_keyspace"] = args.keyspace
        if getattr(args, "contact_points", None):
            points = [p.strip() for arg in args.contact_points for p in arg.split(",") if p.strip()]
            changes["contact_points"] = tuple(points)
        if getattr(args, "port", None):
            changes["port"] = args.port
        return config.with_overrides(**changes) if changes else config
    except (ConfigError, ValueError) as exc:
        raise CliError(str(exc)) from exc


def parse_timestamp(text: str) -> datetime:
    """An ISO timestamp (``Z`` allowed; naive means UTC) or milliseconds since the epoch."""
    from cdcgen.core.time import InvalidTimestamp, generation_timestamp, parse_moment

    try:
        return generation_timestamp(parse_moment(text, "timestamp"))
    except InvalidTimestamp as exc:
        raise CliError(str(exc)) from exc


def load_columns(path: str) -> DescriptionColumns:
    """A description file as columns: anything representable loads, for validation to judge."""
    from cdcgen.core.topology import InvalidDescription
    from cdcgen.extract.description_json import read_description_file

    try:
        return read_description_file(path)
    except OSError as exc:
        raise CliError(f"cannot read description file {path}: {exc.strerror or exc}") from exc
    except InvalidDescription as exc:
        raise CliError(f"description file {path}: {exc}") from exc


def load_strict_description(path: str) -> TopologyDescription:
    """The description to publish; an extracted one is checked against its digest."""
    from cdcgen.core.topology import InvalidDescription
    from cdcgen.extract.lake import ArtifactError

    try:
        if Path(path).is_dir():
            return load_artifact(Path(path)).read_description().to_description()
        return load_columns(path).to_description()
    except (ArtifactError, InvalidDescription) as exc:
        raise CliError(f"cannot publish {path}: {exc}") from exc


def load_artifact(directory: Path) -> GenerationArtifact:
    """The latest extraction of a lake partition folder named on the command line."""
    from cdcgen.extract.lake import ArtifactError, artifact_at

    try:
        return artifact_at(directory)
    except ArtifactError as exc:
        raise CliError(str(exc)) from exc


def load_nodes(path: str) -> tuple[Node, ...]:
    from cdcgen.core.topology import InvalidTopology
    from cdcgen.core.topology_json import nodes_from_json

    try:
        return nodes_from_json(read_json_file(path, "topology"))
    except InvalidTopology as exc:
        raise CliError(f"topology file {path}: {exc}") from exc


def print_json_line(obj: Any) -> None:
    sys.stdout.write(json.dumps(obj, sort_keys=True) + "\n")
