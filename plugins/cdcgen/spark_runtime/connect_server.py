"""The long-lived Spark Connect server that generation extracts and validations run on.

A generation's Spark work is a read-back count and one flag pass: on a warm JVM, less
than it takes to start a driver, let alone to run that driver's cold first job. A server
started once and left running (a service beside the cluster, like the Spark master)
takes both off every generation: the jobs connect to it with ``$CDCGEN_SPARK_REMOTE``
(:func:`cdcgen.spark_runtime.session.remote_for`) and start no JVM of their own.

    python -m cdcgen.spark_runtime.connect_server [--port 15002] [--master local[2]] [--host ADDR]

runs one in the foreground with the configuration those jobs need (Delta's extension
and catalog fixed at its start, which a session checks when it connects), the class
archive when there is one, and Python workers on this interpreter. It reads the lake
with its own access: an S3 lake's ``AWS_*`` variables must be in its environment.

A Connect server runs what its clients send, Python included, so it is closed down to
the clients meant to use it (:mod:`cdcgen.spark_runtime.connect_settings`): it listens on one
address (``$CDCGEN_SPARK_CONNECT_HOST``, loopback by default), it does not start without
a token, and it serves only clients presenting it. The token reaches the JVM in the
variable Spark reads (``SPARK_CONNECT_AUTHENTICATE_TOKEN``), never as a ``--conf``
argument, which anyone on the machine can read in ``ps``. And since its clients can read
its environment, the server and every Python it starts get none of the secrets the
process that launched it may hold (:func:`withheld`): no ``AIRFLOW_*`` variable (the
Fernet key, the JWT secret, the metadata database URL, connections such as the source
cluster's with its password), no password, key or token of anything else.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from pydantic import SecretStr

from cdcgen.adapters.lake_store import S3Access
from cdcgen.core.errors import ExitCode
from cdcgen.errors import ConfigError
from cdcgen.spark_runtime.class_archive import spark_home, with_class_archive
from cdcgen.spark_runtime.connect_settings import SparkConnectSettings
from cdcgen.spark_runtime.s3a import s3a_conf
from cdcgen.spark_runtime.session import CONNECT_KINDS, SHORT_JOB_JIT, job_conf
from cdcgen.spark_runtime.spark_settings import SparkSettings

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


def server_command(port: int, master: str, host: str, home: Path | None = None) -> list[str]:
    """spark-submit of a Connect server on ``host``:``port`` with :func:`server_conf`, its
    driver listening on ``host`` too; the token is not in it (:func:`server_env` has it)."""
    submit = (home or spark_home()) / "bin" / "spark-submit"
    settings: Mapping[str, str] = {
        **server_conf(),
        # Its driver's own RPC and block manager ports too: they would otherwise bind the
        # machine's name. (Executors of a cluster master must reach this address.)
        "spark.driver.bindAddress": host,
        "spark.driver.host": host,
        "spark.connect.grpc.binding.address": host,
        "spark.connect.grpc.binding.port": str(port),
        "spark.app.name": "cdcgen-connect",
    }
    conf = [part for key, value in settings.items() for part in ("--conf", f"{key}={value}")]
    return [str(submit), "--class", SERVER_CLASS, "--master", master, *conf, "spark-internal"]


#: Where Spark's Connect server reads its pre-shared token when no property sets it.
SPARK_TOKEN_ENV = "SPARK_CONNECT_AUTHENTICATE_TOKEN"
#: The lake's object-store access (:class:`~cdcgen.adapters.lake_store.S3Access`, and
#: the AWS SDK's own chain: web identity token files, container credentials): the server
#: reads and writes an S3 lake with it, so these are the credentials it keeps.
LAKE_ACCESS_PREFIX = "AWS_"
#: Names that hold or point at a credential, whatever they belong to: CDCGEN_PASSWORD,
#: CDCGEN_SINK_PASSWORD_FILE, CDCGEN_TLS_KEY_FILE, PGPASSWORD, GITHUB_TOKEN,
#: SSH_AUTH_SOCK, ... (a name too many costs nothing the server needs; one too few
#: hands a secret to whoever the server runs code for).
CREDENTIAL_NAME = re.compile(
    r"PASSWORD|PASSWD|SECRET|TOKEN|CREDENTIAL|PRIVATE|AUTH|COOKIE|API_?KEY|KEY_FILE|_USERNAME$|_CONN$|DSN"
)


def withheld(name: str) -> bool:
    """True for a variable the server must not inherit: every ``AIRFLOW*`` one, and any
    credential but the lake's access."""
    if name.startswith("AIRFLOW"):
        return True
    if name.startswith(LAKE_ACCESS_PREFIX):
        return False
    return CREDENTIAL_NAME.search(name.upper()) is not None


def server_env(token: SecretStr, environ: Mapping[str, str] = os.environ) -> dict[str, str]:
    """The server's environment: ``environ`` less what :func:`withheld` names, Python
    workers on this interpreter, and the token where Spark reads it."""
    kept = {name: value for name, value in environ.items() if not withheld(name)}
    return {
        **kept,
        "PYSPARK_PYTHON": sys.executable,
        "PYSPARK_DRIVER_PYTHON": sys.executable,
        SPARK_TOKEN_ENV: token.get_secret_value(),
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m cdcgen.spark_runtime.connect_server")
    parser.add_argument("--port", type=int, default=DEFAULT_PORT)
    parser.add_argument("--master", help="Spark master (default: $CDCGEN_SPARK_MASTER)")
    parser.add_argument(
        "--host", help="the address to listen on (default: $CDCGEN_SPARK_CONNECT_HOST)"
    )
    args = parser.parse_args(argv)
    try:
        settings = SparkConnectSettings.from_env()
        if args.host is not None:
            settings = settings.with_overrides(host=args.host)
        token = settings.required_secret()
    except ConfigError as exc:
        print(f"cdcgen.spark_runtime.connect_server: {exc}", file=sys.stderr)
        return ExitCode.TERMINAL
    master = args.master or SparkSettings.from_env().master
    command = server_command(args.port, master, settings.host)
    os.execve(command[0], command, server_env(token))
    return 0  # not reached: the server replaces this process


if __name__ == "__main__":
    sys.exit(main())
