"""The long-lived Spark Connect server that generation extracts and validations run on.

A generation's Spark work is a read-back count and one flag pass: about a second on a
warm JVM, against 4 s to start a driver and 1-2 s more for its cold first job. A server
started once and left running (a service beside the cluster, like the Spark master)
takes both off every generation: the jobs connect to it with ``$CDCGEN_SPARK_REMOTE``
(:func:`cdcgen.spark.session.remote_for`) and start no JVM of their own.

    python -m cdcgen.spark.connect_server [--port 15002] [--master local[2]]

runs one in the foreground with the configuration those jobs need (Delta's extension
and catalog fixed at its start, which a session checks when it connects), the class
archive when there is one, and Python workers on this interpreter. It reads the lake
with its own access: an S3 lake's ``AWS_*`` variables must be in its environment.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from cdcgen.adapters.lake_store import S3Access
from cdcgen.spark.class_archive import spark_home, with_class_archive
from cdcgen.spark.s3a import s3a_conf
from cdcgen.spark.session import CONNECT_KINDS, SHORT_JOB_JIT, job_conf

DEFAULT_PORT = 15002
SERVER_CLASS = "org.apache.spark.sql.connect.service.SparkConnectServer"


def server_conf() -> dict[str, str]:
    """One configuration for every kind in :data:`CONNECT_KINDS` (they must agree), less
    the first-tier-only JIT of their short-lived drivers: a server lives long enough for
    the optimizing compiler to pay."""
    merged: dict[str, str] = {}
    for kind in sorted(CONNECT_KINDS):
        for key, value in job_conf(kind).items():
            if SHORT_JOB_JIT.get(key) == value:
                continue
            if merged.setdefault(key, value) != value:
                raise ValueError(f"{key}: the Connect kinds disagree ({merged[key]!r}, {value!r})")
    access = S3Access.from_env()
    return with_class_archive({**merged, **s3a_conf(access.endpoint_url, access.region)})


def server_command(port: int, master: str, home: Path | None = None) -> list[str]:
    """spark-submit of a Connect server on ``port`` (all interfaces) with :func:`server_conf`."""
    submit = (home or spark_home()) / "bin" / "spark-submit"
    settings: Mapping[str, str] = {
        **server_conf(),
        "spark.connect.grpc.binding.port": str(port),
        "spark.app.name": "cdcgen-connect",
    }
    conf = [part for key, value in settings.items() for part in ("--conf", f"{key}={value}")]
    return [str(submit), "--class", SERVER_CLASS, "--master", master, *conf, "spark-internal"]


def server_env(environ: Mapping[str, str] = os.environ) -> dict[str, str]:
    """The server's environment: its Python workers run this interpreter."""
    return {**environ, "PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m cdcgen.spark.connect_server")
    parser.add_argument("--port", type=int, default=DEFAULT_PORT)
    parser.add_argument(
        "--master", default=os.environ.get("CDCGEN_SPARK_MASTER", "local[2]"), help="Spark master"
    )
    args = parser.parse_args(argv)
    command = server_command(args.port, args.master)
    os.execve(command[0], command, server_env())
    return 0  # not reached: the server replaces this process


if __name__ == "__main__":
    sys.exit(main())
