"""`cdcgen replication bootstrap|apply`: a table's changes, from the lake into a sink table.

``bootstrap`` copies the source table into the sink at a recorded time (the sink must be
empty, or ``--replace`` it); ``apply`` brings the sink forward to the lake's watermark
(the cdc_replication DAG runs it on every changes run). The source cluster and the lake
come from the ``CDCGEN_*`` settings; the sink cluster from ``CDCGEN_SINK_*`` ones
(``CDCGEN_SINK_CONTACT_POINTS``, ``_PORT``, ``_USERNAME``, ``_PASSWORD_FILE``, ``_TLS_*``),
and is the source cluster when none is set. Prints the run's record as one JSON line;
exit 0 when every change was applied, 1 when some were rejected (named in the record and
in ``<sink keyspace>.cdc_replication_rejects``), 2 on an error.
"""

from __future__ import annotations

import argparse
import os
import uuid
from typing import TypeAlias

from cdcgen.cli import CliError, decimal
from cdcgen.cli.generation_ops import print_json_line

SubParsers: TypeAlias = "argparse._SubParsersAction[argparse.ArgumentParser]"


def register(subparsers: SubParsers) -> None:
    parser = subparsers.add_parser(
        "replication",
        help="replicate a table's changes from the lake into a sink table",
        description=__doc__.split("\n\n")[1] if __doc__ else None,
    )
    commands = parser.add_subparsers(
        dest="replication_command", metavar="SUBCOMMAND", required=True
    )
    for name, text in (
        ("bootstrap", "copy the source table into the sink at a recorded time"),
        ("apply", "apply the lake's changes beyond the sink's consistency point"),
    ):
        command = commands.add_parser(name, help=text, description=text)
        command.add_argument("--table", required=True, metavar="KEYSPACE.TABLE")
        target = command.add_mutually_exclusive_group()
        target.add_argument("--sink-table", metavar="KEYSPACE.TABLE")
        target.add_argument("--sink-keyspace", metavar="KEYSPACE", help="same table name")
        command.add_argument("--run-id", default="", help="recorded with the run")
        if name == "apply":
            command.add_argument(
                "--chunk-rows", type=decimal, default=None, metavar="N",
                help="changes per checkpointed chunk of streams",
            )  # fmt: skip
        if name == "bootstrap":
            command.add_argument(
                "--replace", action="store_true", help="truncate a sink table holding rows"
            )
        command.set_defaults(func=run_command, replication_command=name)


def run_command(args: argparse.Namespace) -> int:
    from cdcgen.adapters.cql import client_for
    from cdcgen.config import ConfigError, PipelineConfig
    from cdcgen.core.cdc_log import LogTableError
    from cdcgen.core.replication_plan import ReplicationError
    from cdcgen.replication.run import Replication, bootstrap_sink, replicate, sink_environment
    from cdcgen.replication.sink_schema import SinkSchemaError

    try:
        job = Replication.of(args.table, args.sink_table, args.sink_keyspace)
        config = PipelineConfig.from_env()
        sink_config = PipelineConfig.from_env(sink_environment(os.environ))
    except (ConfigError, LogTableError, ValueError) as exc:
        raise CliError(str(exc)) from None
    run_id = args.run_id or f"manual__{uuid.uuid4().hex[:12]}"
    try:
        with client_for(config) as source, client_for(sink_config) as sink:
            if args.replication_command == "bootstrap":
                record = bootstrap_sink(config, source, sink, job, run_id, args.replace)
            else:
                chunk = {"chunk_rows": args.chunk_rows} if args.chunk_rows else {}
                record = replicate(config, source, sink, job, run_id, **chunk)
    except (ReplicationError, SinkSchemaError) as exc:
        raise CliError(str(exc)) from None
    print_json_line(record)
    return 1 if record["rejected"] else 0
