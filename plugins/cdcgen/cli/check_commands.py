"""`cdcgen check`: can the pipeline work with the settings it has, before it runs?

It connects to the source cluster with the configured access (the ``CDCGEN_*``
settings) and checks, one line each: the connection (which cluster and release
answered), the source mode (the configured mode's generation metadata read, and what it
holds), the CDC tables with their CDC TTL, that the log tables can be read, that the
target and state keyspaces can be written, that Spark answers (the configured master;
the Spark Connect server when one is set) and that the lake is writable (a probe object
written, read back and deleted). Writing a keyspace is probed with a harmless
idempotent write, a partition deletion at write time 1 of a key no run uses, into each
of the pipeline's tables there. Exit 0 when every check passed, 1 when one failed::

    ok    connection: connected to cluster 'prod' (release 2026.1.5) at 10.0.0.1:9042, 3 node(s)
    FAIL  state keyspace: cannot write cdc_state.cdc_table_progress: permission refused (...)

With ``--json``, one JSON object per check (``check``, ``ok``, ``detail``; the CDC
tables' check also ``tables``, each with its ``ttl_seconds``).
"""

from __future__ import annotations

import argparse
from typing import TypeAlias

from cdcgen.cli import add_json_flag, plain_text, print_model
from cdcgen.cli.errors import CliError

SubParsers: TypeAlias = "argparse._SubParsersAction[argparse.ArgumentParser]"


def register(subparsers: SubParsers) -> None:
    parser = subparsers.add_parser(
        "check",
        help="check the cluster, permissions, Spark and the lake before a run",
        description=plain_text(__doc__, 1),
    )
    add_json_flag(parser)
    parser.set_defaults(func=check_command)


def check_command(args: argparse.Namespace) -> int:
    from cdcgen.config import PipelineConfig
    from cdcgen.errors import ConfigError
    from cdcgen.pipeline.preflight import check_all
    from cdcgen.spark_runtime.spark_settings import SparkSettings

    try:
        config = PipelineConfig.from_env()
        spark = SparkSettings.from_env()
    except (ConfigError, ValueError) as exc:
        raise CliError(str(exc)) from exc
    report = check_all(config, spark)
    for result in report.results:
        if args.json:
            print_model(result)
        else:
            print(result.line())
    return report.exit_code
