"""`cdcgen generation validate` and `cdcgen generation publish`.

``validate`` runs the very suites the pipeline runs (Great Expectations) on a
description file: exit 0 when valid, 1 with each failed check named (and offending
streams) when not. ``publish`` writes a description to the user-facing tables: streams
first, timestamp last, refusing to overwrite different streams, and only what the
``cdc_generations`` DAG would publish (:func:`cdcgen.pipeline.publish.publish_named`).

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

from cdcgen.cli import decimal, read_json_file
from cdcgen.cli.errors import CliError
from cdcgen.core.errors import ExitCode

if TYPE_CHECKING:
    from cdcgen.config import PipelineConfig
    from cdcgen.core.generation import Generation
    from cdcgen.core.topology import Node, TopologyDescription
    from cdcgen.generation_lake.description_columns import DescriptionColumns
    from cdcgen.generation_lake.lake_tables import GenerationArtifact

SubParsers: TypeAlias = "argparse._SubParsersAction[argparse.ArgumentParser]"


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
    from cdcgen.validation.docs_folder import check_docs_folder
    from cdcgen.validation.errors import ReportFolderError
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
    return ExitCode.OK if result.passed else ExitCode.FINDINGS


# --- publish --------------------------------------------------------------------------


def add_publish(commands: SubParsers) -> None:
    parser = commands.add_parser(
        "publish",
        help="publish a description to cdc_streams_descriptions_v2 + cdc_generation_timestamps",
        description="Write the description's rows to the streams table, then (only if all "
        "succeeded) the timestamp row, under the cdc_generations DAG's rules: only a "
        "generation the source has committed, with its own rows, once every older one is "
        "public and no newer one is. Refuses different streams for a published timestamp.",
    )
    parser.add_argument(
        "--description",
        required=True,
        metavar="FILE",
        help="description JSON, or an extracted lake partition directory (hash-checked; "
        "it must be the extraction of the generation at --timestamp)",
    )
    parser.add_argument("--timestamp", required=True, metavar="ISO", help="generation timestamp")
    parser.add_argument(
        "--keyspace",
        help="target keyspace (default: $CDCGEN_TARGET_KEYSPACE; one of them is required, "
        "system_distributed being what ScyllaDB's consumers read)",
    )
    parser.add_argument(
        "--force",
        action="store_true",
        help="publish a generation already published again (the same rows only), as the "
        "DAG's force Param does",
    )
    parser.add_argument(
        "--contact-points",
        nargs="+",
        metavar="HOST",
        help="CQL nodes (default: $CDCGEN_CONTACT_POINTS)",
    )
    parser.add_argument("--port", type=decimal, help="CQL port (default: $CDCGEN_PORT or 9042)")
    parser.set_defaults(func=publish_command)


def publish_command(args: argparse.Namespace) -> int:
    """The DAG's rules decide (:func:`~cdcgen.pipeline.publish.publish_named`): consumers
    cannot tell a generation published by hand from one the DAG published."""
    from cdcgen.adapters.errors import ConnectionFailed, PublishError
    from cdcgen.adapters.generation_sources import connected_generation_ports
    from cdcgen.adapters.publisher import rows_of
    from cdcgen.core.errors import MetadataError
    from cdcgen.pipeline.errors import PublicationRefused
    from cdcgen.pipeline.publish import publish_named

    timestamp = parse_timestamp(args.timestamp)
    config = connection_config(args)
    require_named_target(args, config)
    description, extracted = load_publication(args.description)
    try:
        with connected_generation_ports(config) as ports:
            publication = publish_named(
                timestamp,
                rows_of(description),
                source=ports.source,
                publisher=ports.publisher,
                target_keyspace=config.target_keyspace,
                extracted=extracted,
                force=args.force,
            )
    except PublicationRefused as exc:
        raise CliError(f"cannot publish {args.description}: {exc}") from None
    except (PublishError, MetadataError, ConnectionFailed) as exc:
        raise CliError(str(exc)) from exc
    print(
        json.dumps(
            {
                "published": timestamp.isoformat(timespec="milliseconds"),
                "generation_id": publication.generation.id,
                "keyspace": publication.target_keyspace,
                "rows": publication.stream_rows,
                "streams": publication.streams,
            }
        )
    )
    return 0


def require_named_target(args: argparse.Namespace, config: PipelineConfig) -> None:
    """Refuse to publish where nobody said to: the default target, ``system_distributed``,
    is the keyspace every consumer of the cluster reads, so a command typed by hand writes
    there only when ``--keyspace`` or ``CDCGEN_TARGET_KEYSPACE`` names it."""
    from cdcgen.config import PipelineConfig

    if args.keyspace or "target_keyspace" in PipelineConfig.from_env().model_fields_set:
        return
    raise CliError(
        f"no target keyspace named: pass --keyspace or set CDCGEN_TARGET_KEYSPACE (the "
        f"default, {config.target_keyspace}, is what the cluster's CDC consumers read; "
        "name it to publish there)"
    )


# --- shared helpers (also used by `cdcgen generations`) --------------------------------


def connection_config(args: argparse.Namespace) -> PipelineConfig:
    """``PipelineConfig.from_env()`` with the command line's connection options applied."""
    from cdcgen.config import PipelineConfig
    from cdcgen.errors import ConfigError

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
    from cdcgen.core.errors import InvalidTimestamp
    from cdcgen.core.time import generation_timestamp, parse_moment

    try:
        return generation_timestamp(parse_moment(text, "timestamp"))
    except InvalidTimestamp as exc:
        raise CliError(str(exc)) from exc


def load_columns(path: str) -> DescriptionColumns:
    """A description file as columns: anything representable loads, for validation to judge."""
    from cdcgen.core.errors import InvalidDescription
    from cdcgen.generation_lake.description_json import read_description_file

    try:
        return read_description_file(path)
    except OSError as exc:
        raise CliError(f"cannot read description file {path}: {exc.strerror or exc}") from exc
    except InvalidDescription as exc:
        raise CliError(f"description file {path}: {exc}") from exc


def load_publication(path: str) -> tuple[TopologyDescription, Generation | None]:
    """The description to publish and, for a lake partition, the generation it was
    extracted from (checked against its digest); a JSON file names no generation."""
    from cdcgen.core.errors import InvalidDescription
    from cdcgen.generation_lake.errors import ArtifactError

    try:
        if Path(path).is_dir():
            artifact = load_artifact(Path(path))
            return artifact.read_description().to_description(), artifact.generation
        return load_columns(path).to_description(), None
    except (ArtifactError, InvalidDescription) as exc:
        raise CliError(f"cannot publish {path}: {exc}") from exc


def load_artifact(directory: Path) -> GenerationArtifact:
    """The latest extraction of a lake partition folder named on the command line."""
    from cdcgen.generation_lake.errors import ArtifactError
    from cdcgen.generation_lake.lake_tables import artifact_at

    try:
        return artifact_at(directory)
    except ArtifactError as exc:
        raise CliError(str(exc)) from exc


def load_nodes(path: str) -> tuple[Node, ...]:
    from cdcgen.core.errors import InvalidTopology
    from cdcgen.core.topology_json import nodes_from_json

    try:
        return nodes_from_json(read_json_file(path, "topology"))
    except InvalidTopology as exc:
        raise CliError(f"topology file {path}: {exc}") from exc


def print_json_line(obj: Any) -> None:
    sys.stdout.write(json.dumps(obj, sort_keys=True) + "\n")
