"""`cdcgen changes status`: where each table's changes extraction stands.

Per table, what the state tables of the changes pipeline say (the state keyspace:
``CDCGEN_STATE_KEYSPACE``, else ``CDCGEN_TARGET_KEYSPACE``, on the source cluster): the
watermark (everything of the table up to it is in the lake), the lag (now minus the
watermark), the last run and its outcome. A run saves the watermark last, so a run
whose checkpoints are newer than the watermark stopped part-way, or is still running.
It reads and never writes: a keyspace or table that is not there is an error naming it
(exit 3), not something to create. A table by line, or with ``--json`` one JSON object
per table::

    {"table": "shop.orders", "watermark": "2026-05-01T10:00:00Z", "lag_seconds": 42.0, ...}
"""

from __future__ import annotations

import argparse
from datetime import UTC, datetime
from typing import TYPE_CHECKING, TypeAlias

from cdcgen.cli import add_json_flag, plain_text, print_model, print_table
from cdcgen.cli.errors import CliError

if TYPE_CHECKING:
    from cdcgen.core.pipeline_status import ChangesStatus

SubParsers: TypeAlias = "argparse._SubParsersAction[argparse.ArgumentParser]"


def register(subparsers: SubParsers) -> None:
    parser = subparsers.add_parser(
        "changes",
        help="show where each table's changes extraction stands",
        description="The changes pipeline: CDC log tables extracted into the lake.",
    )
    commands = parser.add_subparsers(dest="changes_command", metavar="SUBCOMMAND", required=True)
    status = commands.add_parser(
        "status",
        help="per table: watermark, lag, last run and its outcome (read-only)",
        description=plain_text(__doc__, 1),
    )
    status.add_argument(
        "--table",
        action="append",
        metavar="KEYSPACE.TABLE",
        help="only this table (again for more); default: every table with state",
    )
    status.add_argument(
        "--state-keyspace",
        metavar="KEYSPACE",
        help="where the state is (default: $CDCGEN_STATE_KEYSPACE, else $CDCGEN_TARGET_KEYSPACE)",
    )
    add_json_flag(status)
    status.set_defaults(func=status_command)


def status_command(args: argparse.Namespace) -> int:
    from cassandra import DriverException

    from cdcgen.adapters.cql import client_for
    from cdcgen.config import PipelineConfig
    from cdcgen.core.cdc_log import TableRef
    from cdcgen.core.errors import CdcgenError
    from cdcgen.errors import ConfigError
    from cdcgen.pipeline.status import read_changes_status

    try:
        config = PipelineConfig.from_env()
        tables = [TableRef.parse(name) for name in args.table or ()]
    except (ConfigError, ValueError) as exc:
        raise CliError(str(exc)) from exc
    keyspace = args.state_keyspace or config.checkpoint_keyspace
    try:
        with client_for(config) as client:
            found = read_changes_status(client, keyspace, datetime.now(UTC), tables)
    except (CdcgenError, DriverException) as exc:  # named, with its kind's exit status
        raise CliError(str(exc)) from exc
    if args.json:
        for status in found:
            print_model(status)
    else:
        print_changes(found)
    return 0


def print_changes(found: list[ChangesStatus]) -> None:
    header = ("TABLE", "WATERMARK", "LAG", "LAST RUN", "AT", "OUTCOME")
    print_table(
        header,
        (
            (s.table, moment(s.watermark), lag(s.lag_seconds), s.last_run or "-",
             moment(s.last_run_at), s.outcome.value)
            for s in found
        ),
    )  # fmt: skip


def moment(value: datetime | None) -> str:
    """A time as people read it in a table: UTC to the millisecond."""
    if value is None:
        return "-"
    return value.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3] + "Z"


def lag(seconds: float | None) -> str:
    """A lag as people read it: ``42s``, ``3m12s``, ``2h05m``, ``3d04h``."""
    if seconds is None:
        return "-"
    whole = int(seconds)
    sign, whole = ("-", -whole) if whole < 0 else ("", whole)
    days, rest = divmod(whole, 86_400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    if days:
        return f"{sign}{days}d{hours:02d}h"
    if hours:
        return f"{sign}{hours}h{minutes:02d}m"
    if minutes:
        return f"{sign}{minutes}m{secs:02d}s"
    return f"{sign}{secs}s"
