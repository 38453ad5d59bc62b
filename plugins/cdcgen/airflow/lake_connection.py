"""The lake's object-store access from an Airflow connection: ``cdcgen_lake`` (type aws).

A lake on S3 (``CDCGEN_LAKE_PATH=s3://bucket/prefix``) is reached with the credentials
of this connection, in the Amazon provider's form: login = access key id, password =
secret access key, extras ``endpoint_url`` (an S3-compatible store), ``region_name``
and ``aws_session_token``. Without the connection, the environment's ``AWS_*`` stand
(or what the AWS SDKs find by themselves, such as an instance role).

The connection becomes the ``AWS_*`` variables every engine of the lake reads
(:mod:`cdcgen.adapters.lake_store`), in two places only: the task's own process
(:func:`use_lake_connection`, called by a task body that reads the lake, next to
reading its configuration: the hook itself changes nothing) and the
environment of the spark-submit it starts (:class:`~cdcgen.airflow.spark_submit.
CdcSparkSubmitOperator`, at execute time). Never in XCom, a rendered field, argv or a
log line.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from cdcgen.adapters.s3_settings import S3Settings
from cdcgen.errors import ConfigError

#: The connection holding the lake's object-store credentials (type aws).
LAKE_CONN_ID = "cdcgen_lake"

#: Connection field (``login``, ``password``, ``extra.<key>``) -> the variable it sets,
#: as :class:`~cdcgen.adapters.s3_settings.S3Settings` declares it.
LAKE_SETTINGS: dict[str, str] = S3Settings.connection_settings()
#: Connection extras accepted, and the variable each one sets.
LAKE_EXTRAS: dict[str, str] = {
    field.removeprefix("extra."): variable
    for field, variable in LAKE_SETTINGS.items()
    if field.startswith("extra.")
}


def lake_environment(
    login: str | None, password: str | None, extra: Mapping[str, Any]
) -> dict[str, str]:
    """The ``AWS_*`` variables a connection's fields stand for."""
    unknown = sorted(set(extra) - set(LAKE_EXTRAS))
    if unknown:
        raise ConfigError(
            f"{LAKE_CONN_ID} connection extras {unknown} are not lake settings; "
            f"known: {sorted(LAKE_EXTRAS)}"
        )
    if bool(login) != bool(password):
        raise ConfigError(
            f"{LAKE_CONN_ID}: the access key id (login) and the secret (password) go together"
        )
    variables = {LAKE_EXTRAS[key]: str(value) for key, value in extra.items() if value}
    if login and password:
        variables.update({LAKE_SETTINGS["login"]: login, LAKE_SETTINGS["password"]: password})
    return variables


def lake_connection_env(conn_id: str = LAKE_CONN_ID) -> dict[str, str]:
    """The connection's ``AWS_*`` variables; none if Airflow has no such connection."""
    from airflow.sdk import BaseHook
    from airflow.sdk.exceptions import AirflowNotFoundException

    try:
        conn = BaseHook.get_connection(conn_id)
    except AirflowNotFoundException:
        return {}
    return lake_environment(conn.login, conn.password, conn.extra_dejson)


def use_lake_connection(conn_id: str = LAKE_CONN_ID) -> None:
    """Give this task's process the connection's access to the lake (its environment is
    the task's own: nothing outlives the task)."""
    os.environ.update(lake_connection_env(conn_id))
