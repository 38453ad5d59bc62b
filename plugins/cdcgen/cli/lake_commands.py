"""`cdcgen lake migrate`: turn a lake of plain Parquet folders into Delta tables.

Lakes written before the tables were Delta hold the same data as plain Parquet. The
pipeline refuses to write into one (it cannot tell a committed file from a
half-written one there); this command converts it in place. Each generation extracted
in the old layout is written again from its own description (checked against its
manifest) as one commit of the generations table, then its old files are removed.
Each changes table is converted with Delta's ``CONVERT TO DELTA``: one commit that lists
the files already there, none moved or rewritten, read back and row-counted against the
Parquet files before it is declared converted. Nothing extracted is lost. One JSON
object per generation and per table on standard output::

    {"generation": "generation_ts=1795334400005", "converted": true, "version": 3, ...}
    {"table": "shop.orders", "converted": true, "version": 0, "rows": 51234}

Changes tables that are already Delta are listed with ``"converted": false``. Run it
once, with no DAG running (their writes would fail on the unconverted lake).
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, TypeAlias, TypedDict

from cdcgen.cli import plain_text
from cdcgen.cli.errors import CliError
from cdcgen.cli.generation_ops import print_json_line

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from cdcgen.adapters.lake_store import LakeRoot

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
        help="convert a Parquet lake's generations and changes tables to Delta, in place",
        description=plain_text(__doc__, 1),
    )
    migrate.add_argument(
        "--lake", help="the lake's root (default: $CDCGEN_LAKE_PATH)", metavar="PATH"
    )
    migrate.set_defaults(func=migrate_command)


def migrate_command(args: argparse.Namespace) -> int:
    from cdcgen.changes.layout import CHANGES_DIR, is_parquet_lake, table_roots

    lake = args.lake
    if lake is None:
        from cdcgen.config import PipelineConfig
        from cdcgen.errors import ConfigError

        try:
            lake = PipelineConfig.from_env().lake_path
        except (ConfigError, ValueError) as exc:
            raise CliError(str(exc)) from exc
    from cdcgen.adapters.lake_store import LakeLocation
    from cdcgen.core.errors import LakeUriError
    from cdcgen.generation_lake.errors import ArtifactError
    from cdcgen.generation_lake.generation_migration import migrate_generations

    try:
        location = LakeLocation.of(lake)
    except LakeUriError as exc:
        raise CliError(str(exc)) from exc
    if not location.is_local:
        print_json_line({"lake": location.uri, "converted": 0, "why": "never Parquet on S3"})
        return 0
    lake = location.path
    changes = lake / CHANGES_DIR
    if not lake.is_dir():
        raise CliError(f"{lake} does not exist: nothing was extracted there")
    try:
        for converted in migrate_generations(lake):
            print_json_line(converted)
    except ArtifactError as exc:
        raise CliError(str(exc)) from exc
    if not changes.is_dir():
        return 0
    spark = None
    for root in table_roots(lake):
        if spark is None and is_parquet_lake(root):
            from cdcgen.spark_runtime.session import JobKind, job_session

            spark = job_session(JobKind.CHANGES_EXTRACT, "cdcgen-lake-migrate")
        print_json_line(migrate_table(spark, root))
    return 0


class TableConversion(TypedDict):
    """One changes table after ``cdcgen lake migrate``: converted or already Delta."""

    table: str
    converted: bool
    version: int
    rows: int


def migrate_table(spark: SparkSession | None, root: LakeRoot) -> TableConversion:
    """Convert one table if it is Parquet; verify no row was lost."""
    import pyarrow.dataset as ds

    from cdcgen.adapters.delta_tables import table_version
    from cdcgen.adapters.lake_store import LakeLocation
    from cdcgen.changes.layout import convert_to_delta, is_parquet_lake, read_delta

    before = None
    if spark is not None and is_parquet_lake(root):
        folder = LakeLocation.of(root).path
        before = ds.dataset(folder, format="parquet", partitioning="hive").count_rows()
        convert_to_delta(spark, root)
    version = table_version(root)
    if version is None:
        raise CliError(f"{root} is neither a Delta table nor a Parquet changes table")
    rows = read_delta(root, columns=[]).num_rows
    if before is not None and rows != before:
        raise CliError(
            f"{root}: the Delta table reads {rows} rows, its Parquet files held {before}"
        )
    return TableConversion(
        table=LakeLocation.of(root).name,
        converted=before is not None,
        version=version,
        rows=rows,
    )
