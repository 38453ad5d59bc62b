"""`cdcgen lake migrate`: turn a changes lake of plain Parquet folders into Delta tables.

Lakes written before the changes tables were Delta hold the same partitions as plain
Parquet. The pipeline refuses to write into one (it cannot tell a committed file from a
half-written one there); this command converts each table in place with Delta's
``CONVERT TO DELTA``: one commit that lists the files already there, none moved or
rewritten, so nothing extracted is lost. It then reads the table back and compares its
row count with the Parquet files' before declaring the table converted. One JSON object
per table on standard output::

    {"table": "shop.orders", "converted": true, "version": 0, "rows": 51234}

Tables that are already Delta are listed with ``"converted": false``. Run it once,
with no changes DAG running (the DAG's writes would fail on the unconverted table).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeAlias

from cdcgen.cli import CliError
from cdcgen.cli.generation_ops import print_json_line

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

SubParsers: TypeAlias = "argparse._SubParsersAction[argparse.ArgumentParser]"


def register(subparsers: SubParsers) -> None:
    parser = subparsers.add_parser(
        "lake",
        help="maintain the lake (convert a Parquet lake to Delta)",
        description="Maintain the lake's tables.",
    )
    commands = parser.add_subparsers(dest="lake_command", metavar="SUBCOMMAND", required=True)
    migrate = commands.add_parser(
        "migrate",
        help="convert every changes table of a Parquet lake into a Delta table, in place",
        description=__doc__.split("\n\n")[1] if __doc__ else None,
    )
    migrate.add_argument(
        "--lake", type=Path, help="the lake's root (default: $CDCGEN_LAKE_PATH)", metavar="PATH"
    )
    migrate.set_defaults(func=migrate_command)


def migrate_command(args: argparse.Namespace) -> int:
    from cdcgen.changes.layout import CHANGES_DIR, is_parquet_lake, table_roots

    lake = args.lake
    if lake is None:
        from cdcgen.config import ConfigError, PipelineConfig

        try:
            lake = PipelineConfig.from_env().lake_path
        except (ConfigError, ValueError) as exc:
            raise CliError(str(exc)) from exc
    changes = Path(lake) / CHANGES_DIR
    if not changes.is_dir():
        raise CliError(f"{changes} does not exist: no changes were extracted into {lake}")
    spark = None
    for root in table_roots(lake):
        if spark is None and is_parquet_lake(root):
            from cdcgen.spark.session import JobKind, job_session

            spark = job_session(JobKind.CHANGES_EXTRACT, "cdcgen-lake-migrate")
        print_json_line(migrate_table(spark, root))
    return 0


def migrate_table(spark: SparkSession | None, root: Path) -> dict[str, Any]:
    """Convert one table if it is Parquet; verify no row was lost."""
    import pyarrow.dataset as ds

    from cdcgen.changes.layout import (
        convert_to_delta,
        is_parquet_lake,
        read_delta,
        table_version,
    )

    before = None
    if spark is not None and is_parquet_lake(root):
        before = ds.dataset(root, format="parquet", partitioning="hive").count_rows()
        convert_to_delta(spark, root)
    version = table_version(root)
    if version is None:
        raise CliError(f"{root} is neither a Delta table nor a Parquet changes table")
    rows = read_delta(root, columns=[]).num_rows
    if before is not None and rows != before:
        raise CliError(
            f"{root}: the Delta table reads {rows} rows, its Parquet files held {before}"
        )
    return {"table": root.name, "converted": before is not None, "version": version, "rows": rows}
