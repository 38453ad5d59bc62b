"""The job behind ``spark/replication_bootstrap.py``: bootstrap one sink table.

A bootstrap copies the source table into the sink table at a snapshot time and records
it as the sink's consistency point (:func:`cdcgen.replication.replication_run.bootstrap_sink`); the
copy is this application's Spark job, spread over the executors by token range, and a
copy left unfinished by an earlier attempt is resumed. The arguments say which tables;
how to reach them comes from the environment as the typed configuration, exactly as the
DAG's tasks saw it: the source's ``CDCGEN_*`` variables, the sink's ``CDCGEN_SINK_*``
ones (:func:`~cdcgen.replication.replication_run.sink_environment`; the credentials of both as a
user name and a password file only, which :class:`~cdcgen.airflow.spark_submit.
CdcSparkSubmitOperator` adds at execute time) and ``CDCGEN_REPLICATION_*``. Prints the
bootstrap's record and writes it to ``--output``. Exit status
(:class:`~cdcgen.core.errors.ExitCode`): 0 done, 3 refused (terminal: the message says
why and what to run), 4 stopped part-way (transient: run it again, it resumes).
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence
from pathlib import Path

from cdcgen.core.errors import ExitCode


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--table", required=True, help="keyspace.table (the source table)")
    parser.add_argument("--sink-table", required=True, help="keyspace.table on the sink")
    parser.add_argument("--run-id", default="", help="recorded with the bootstrap")
    parser.add_argument(
        "--replace", action="store_true", help="truncate a sink table holding rows first"
    )
    parser.add_argument(
        "--output", type=Path, default=None, help="also write the record to this file"
    )
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    from cdcgen.adapters.cql import client_for
    from cdcgen.adapters.errors import exit_code
    from cdcgen.config import PipelineConfig
    from cdcgen.core.errors import CdcgenError
    from cdcgen.core.replication_record import ReplicationRecord, ReplicationRunStatus
    from cdcgen.pipeline.result_files import write_result
    from cdcgen.replication.cql_ports import cql_ports
    from cdcgen.replication.replication_run import (
        SINK_PREFIX,
        Mode,
        Replication,
        ReplicationRequest,
        bootstrap_sink,
        sink_environment,
    )
    from cdcgen.replication.settings import ReplicationSettings

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s %(message)s")
    args = parse_args(argv)
    failed = ReplicationRecord(
        kind="bootstrap", source_table=args.table, sink_table=args.sink_table, run_id=args.run_id
    )
    if args.output is not None:
        args.output.unlink(missing_ok=True)  # a re-run's result replaces the last one's
    try:
        config = PipelineConfig.from_env()
        sink_config = PipelineConfig.from_env(
            sink_environment(
                {**PipelineConfig.read_env(), **PipelineConfig.read_env_under(SINK_PREFIX)}
            )
        )
        settings = ReplicationSettings.from_env()
        job = Replication.of(args.table, sink_table=args.sink_table)
        mode = Mode.BOOTSTRAP_REPLACE if args.replace else Mode.BOOTSTRAP
        with client_for(config) as source, client_for(sink_config) as sink:
            ports = cql_ports(config, source, sink, settings, sink_config=sink_config)
            record = bootstrap_sink(config, ports, ReplicationRequest(job, args.run_id, mode))
    except CdcgenError as exc:
        # Refused (a bad setting or name, a refused login, a sink that cannot take the
        # table): a retry would be refused the same way. Incomplete: a retry resumes.
        status = exit_code(exc)
        terminal = status is ExitCode.TERMINAL
        outcome = ReplicationRunStatus.REFUSED if terminal else ReplicationRunStatus.INCOMPLETE
        write_result(args.output, failed.updated(status=outcome, error=str(exc)).to_json())
        return status
    write_result(args.output, record.to_json())
    return ExitCode.OK


# spark-submit runs this file (cdcgen.airflow.spark_jobs resolves it from the package).
if __name__ == "__main__":
    sys.exit(main())
