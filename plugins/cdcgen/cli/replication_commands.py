"""`cdcgen replication bootstrap|apply`: a table's changes, from the lake into a sink table.

``bootstrap`` copies the source table into the sink at a recorded time (the sink must be
empty, or ``--replace`` it), as a Spark job over the ring's token ranges; a copy that
was killed resumes where it stopped when run again. ``apply`` brings the sink forward to
the lake's watermark (the cdc_replication DAG runs it on every changes run). The source
cluster and the lake come from the ``CDCGEN_*`` settings; the sink cluster from
``CDCGEN_SINK_*`` ones (``CDCGEN_SINK_CONTACT_POINTS``, ``_PORT``, ``_USERNAME``,
``_PASSWORD_FILE``, ``_TLS_*``), and is the source cluster when none is set (a sink that
is then the source table itself is refused). The copy runs on a local Spark session
(``CDCGEN_SPARK_MASTER``, default ``local[2]``; a ``spark://`` or ``k8s://`` master runs
its tasks on that cluster, which is given the package and the settings the tasks need).
``--dry-run`` checks everything and prints what would be done, such as the table a
``--replace`` would truncate, writing nothing. Prints the run's record as one JSON line;
exit 0 when every change was applied, 1 when some were rejected (named in the record and
in ``<sink keyspace>.cdc_replication_rejects``), 2 on a flag or setting it cannot take,
3 when the sink cannot take the table as things are (the message says why), 4 when the
copy or the apply stopped part-way (transient: run it again to resume).

``status`` prints, per replicated table, what the state tables on the sink say (in the
sink table's keyspace, on the sink cluster: the ``CDCGEN_SINK_*`` settings): the
consistency point (every change up to it is in the sink), the lag (now minus that
point), the last run and its outcome: ``applied``, ``rejected changes`` (the run left
changes in ``cdc_replication_rejects``) or ``copy unfinished`` (a bootstrap's copy
stopped part-way: run the bootstrap again to resume it). It reads and never writes: a
keyspace or table that is not there is an error naming it (exit 3). A table by line, or
with ``--json`` one JSON object per sink table.
"""

from __future__ import annotations

import argparse
import sys
import uuid
from typing import TYPE_CHECKING, TypeAlias

from cdcgen.cli import add_json_flag, decimal, plain_text, print_model, print_table
from cdcgen.cli.errors import CliError
from cdcgen.cli.generation_ops import print_json_line
from cdcgen.core.errors import ExitCode

if TYPE_CHECKING:
    from cdcgen.core.pipeline_status import ReplicationStatus

SubParsers: TypeAlias = "argparse._SubParsersAction[argparse.ArgumentParser]"


def register(subparsers: SubParsers) -> None:
    parser = subparsers.add_parser(
        "replication",
        help="replicate a table's changes from the lake into a sink table",
        description=plain_text(__doc__, 1, 2),
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
                "--slice-rows", type=decimal, default=None, metavar="N",
                help="changes per checkpointed time slice (the memory bound; default "
                "CDCGEN_REPLICATION_SLICE_ROWS)",
            )  # fmt: skip
        if name == "bootstrap":
            command.add_argument(
                "--replace", action="store_true", help="truncate a sink table holding rows"
            )
        command.add_argument(
            "--dry-run", action="store_true",
            help="check everything and print what would be done (what a bootstrap would "
            "truncate); write nothing",
        )  # fmt: skip
        command.set_defaults(func=run_command, replication_command=name)
    status = commands.add_parser(
        "status",
        help="per sink table: consistency point, lag, last run and its outcome (read-only)",
        description=plain_text(__doc__, 2),
    )
    status.add_argument(
        "--sink-keyspace",
        metavar="KEYSPACE",
        help="the keyspace whose sink tables to show (default: every keyspace of the sink "
        "cluster that holds replication state)",
    )
    add_json_flag(status)
    status.set_defaults(func=status_command)


def run_command(args: argparse.Namespace) -> int:
    from cdcgen.adapters.cql import client_for
    from cdcgen.config import PipelineConfig
    from cdcgen.core.errors import ApplyIncomplete, CopyIncomplete, LogTableError, ReplicationError
    from cdcgen.errors import ConfigError
    from cdcgen.replication.cql_ports import cql_ports
    from cdcgen.replication.errors import SinkSchemaError
    from cdcgen.replication.replication_run import (
        SINK_PREFIX,
        Mode,
        Replication,
        ReplicationRequest,
        bootstrap_sink,
        replicate,
        sink_environment,
    )
    from cdcgen.replication.settings import ReplicationSettings

    try:
        job = Replication.of(args.table, args.sink_table, args.sink_keyspace)
        config = PipelineConfig.from_env()
        sink_config = PipelineConfig.from_env(
            sink_environment(
                {**PipelineConfig.read_env(), **PipelineConfig.read_env_under(SINK_PREFIX)}
            )
        )
        settings = ReplicationSettings.from_env()
        if getattr(args, "slice_rows", None):
            settings = settings.with_overrides(slice_rows=args.slice_rows)
    except (ConfigError, LogTableError, ValueError) as exc:
        raise CliError(str(exc)) from None
    run_id = args.run_id or f"manual__{uuid.uuid4().hex[:12]}"
    if args.replication_command == "bootstrap":
        mode = Mode.BOOTSTRAP_REPLACE if args.replace else Mode.BOOTSTRAP
    else:
        mode = Mode.APPLY
    request = ReplicationRequest(job, run_id, mode, dry_run=args.dry_run)
    try:
        with client_for(config) as source, client_for(sink_config) as sink:
            ports = cql_ports(config, source, sink, settings, sink_config=sink_config)
            if args.replication_command == "bootstrap":
                record = bootstrap_sink(config, ports, request)
            else:
                record = replicate(config, ports, request)
    except (ReplicationError, SinkSchemaError) as exc:
        raise CliError(str(exc)) from None
    except (CopyIncomplete, ApplyIncomplete) as exc:
        print(f"cdcgen: {exc}", file=sys.stderr)
        return ExitCode.TRANSIENT
    print_json_line(record.to_json())
    return ExitCode.FINDINGS if record.rejected_count else ExitCode.OK


def status_command(args: argparse.Namespace) -> int:
    from datetime import UTC, datetime

    from cassandra import DriverException

    from cdcgen.adapters.cql import client_for
    from cdcgen.cli.changes_commands import lag, moment
    from cdcgen.config import PipelineConfig
    from cdcgen.core.errors import CdcgenError, StateMissing
    from cdcgen.errors import ConfigError
    from cdcgen.pipeline.status import read_replication_status, sink_keyspaces
    from cdcgen.replication.replication_run import SINK_PREFIX, sink_environment

    try:
        sink_config = PipelineConfig.from_env(
            sink_environment(
                {**PipelineConfig.read_env(), **PipelineConfig.read_env_under(SINK_PREFIX)}
            )
        )
    except (ConfigError, ValueError) as exc:
        raise CliError(str(exc)) from exc
    now = datetime.now(UTC)
    try:
        with client_for(sink_config) as sink:
            keyspaces = [args.sink_keyspace] if args.sink_keyspace else sink_keyspaces(sink)
            if not keyspaces:
                hosts = ",".join(sink_config.contact_points)
                raise StateMissing(
                    f"no keyspace of the sink cluster ({hosts}) holds cdc_replication_progress: "
                    "no replication has run into it (the sink is CDCGEN_SINK_CONTACT_POINTS, "
                    "else the source cluster)"
                )
            found = [s for ks in keyspaces for s in read_replication_status(sink, ks, now)]
    except (CdcgenError, DriverException) as exc:  # named, with its kind's exit status
        raise CliError(str(exc)) from exc
    if args.json:
        for status in found:
            print_model(status)
        return 0
    header = ("SOURCE", "SINK", "CONSISTENT UNTIL", "LAG", "LAST RUN", "AT", "OUTCOME")
    print_table(
        header,
        (
            (s.source_table, s.sink_table, moment(s.consistent_until), lag(s.lag_seconds),
             s.last_run or "-", moment(s.last_run_at), outcome_text(s))
            for s in found
        ),
    )  # fmt: skip
    return 0


def outcome_text(status: ReplicationStatus) -> str:
    """The outcome with its count: how many changes, how many ranges copied."""
    if status.rejected_in_last_run:
        return f"{status.outcome.value} ({status.rejected_in_last_run})"
    if status.copied_ranges is not None:
        return f"{status.outcome.value} ({status.copied_ranges} ranges copied)"
    return status.outcome.value
