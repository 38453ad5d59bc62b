"""``CdcSourceHook``: an Airflow connection in, a :class:`PipelineConfig` and a CQL client out.

The connection carries what belongs to the source cluster: its hosts
(comma-separated), port, credentials, and as extras how it stores generations
(``source_mode``, ``source_keyspace_prefix``), how to read its clocks
(``clock_source``), TLS and its timing settings: each field replaces the ``CDCGEN_*``
variable its setting declares (``env(..., connection=...)``; the configuration
reference lists them).  Everything else (lake path, target keyspace, report directory,
...) comes from ``CDCGEN_*`` environment variables, so one typed object reaches every
task.
Operators create this hook in ``execute`` only: building it reads the connection.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from airflow.sdk import BaseHook

from cdcgen.access_settings import AccessSettings
from cdcgen.airflow.connections import PASS_THROUGH_EXTRAS, SOURCE_CONN_ID
from cdcgen.config import PipelineConfig, env_text
from cdcgen.core.errors import LakeUriError
from cdcgen.core.lake_uri import run_lake
from cdcgen.errors import ConfigError

if TYPE_CHECKING:
    from cdcgen.adapters.cql import CqlClient
    from cdcgen.airflow.run_params import RunParams

#: Connection field (``host``, ``port``, ``login``, ``password``, ``extra.<key>``) -> the
#: ``CDCGEN_*`` variable it replaces, as the settings models declare it.
CONNECTION_SETTINGS: dict[str, str] = PipelineConfig.connection_settings()
#: Connection extras accepted as settings, and the variable each one replaces.
EXTRA_SETTINGS: dict[str, str] = {
    field.removeprefix("extra."): variable
    for field, variable in CONNECTION_SETTINGS.items()
    if field.startswith("extra.")
}


def config_from_connection(
    host: str | None,
    port: int | None,
    extra: Mapping[str, Any],
    env: Mapping[str, str] | None = None,
    *,
    login: str | None = None,
    password: str | None = None,
) -> PipelineConfig:
    """Merge a connection's fields over the ``CDCGEN_*`` environment.

    The connection's login and password are the credentials (they replace any
    ``CDCGEN_USERNAME`` / ``CDCGEN_PASSWORD[_FILE]`` of the environment). Unknown extras
    are an error rather than ignored: a misspelt ``source_mode`` would otherwise read the
    wrong tables without a word, and a misspelt ``tls_ca_file`` would trust the system's
    CAs instead of the cluster's.
    """
    known = set(EXTRA_SETTINGS) | set(PASS_THROUGH_EXTRAS)
    unknown = sorted(set(extra) - known)
    if unknown:
        raise ConfigError(
            f"connection extras {unknown} are not cdcgen settings; known: {sorted(known)}"
        )
    merged = PipelineConfig.read_env(env)
    if host:
        merged[CONNECTION_SETTINGS["host"]] = host
    if port:
        merged[CONNECTION_SETTINGS["port"]] = str(port)
    for key, value in extra.items():
        if key in EXTRA_SETTINGS:
            merged[EXTRA_SETTINGS[key]] = env_text(value)  # JSON true -> "true"
    if login or password:
        for variable in AccessSettings.credential_variables():
            merged.pop(variable, None)
        merged[CONNECTION_SETTINGS["login"]] = login or ""
        merged[CONNECTION_SETTINGS["password"]] = password or ""
    config = PipelineConfig.from_env(merged)
    passed = {k: str(v) for k, v in extra.items() if k in PASS_THROUGH_EXTRAS}
    return config.with_overrides(extra={**config.extra, **passed}) if passed else config


class CdcSourceHook(BaseHook):
    """Reads a cluster's connection (``cdc_source`` by default; of type ``cdcgen``, whose
    form the provider declares, or ``cassandra`` with the same fields) into cdcgen's
    configuration."""

    conn_name_attr = "cdc_conn_id"
    default_conn_name = SOURCE_CONN_ID
    conn_type = "cdcgen"
    hook_name = "cdcgen: a ScyllaDB cluster (CDC source or replication sink)"

    def __init__(self, cdc_conn_id: str = SOURCE_CONN_ID, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.cdc_conn_id = cdc_conn_id

    def get_config(self, **overrides: Any) -> PipelineConfig:
        """The pipeline configuration for this connection, with per-run overrides applied.
        Nothing else changes: a task that reaches the lake gives its process the lake's
        access itself (:func:`~cdcgen.airflow.lake_connection.use_lake_connection`)."""
        conn = self.get_connection(self.cdc_conn_id)
        config = config_from_connection(
            conn.host, conn.port, conn.extra_dejson, login=conn.login, password=conn.password
        )
        return config.with_overrides(**overrides) if overrides else config

    def config_for_run(self, params: RunParams) -> PipelineConfig:
        """The connection's configuration with a run's Params applied (``lake_path``)."""
        config = self.get_config()
        if not params.lake_path:
            return config
        roots = (config.lake_path, *config.lake_roots)
        try:
            return config.with_overrides(lake_path=run_lake(params.lake_path, roots))
        except LakeUriError as exc:
            raise ConfigError(str(exc)) from None

    def test_connection(self) -> tuple[bool, str]:
        """The connection form's Test button: the checks of `cdcgen check` that concern
        the cluster (:func:`cdcgen.pipeline.preflight.check_source`): the settings it
        gives are valid, a node answers with them (credentials and TLS included), the
        source mode's generation metadata and the CDC log tables can be read, the target
        and state keyspaces written. The message is the first failure, named, or what
        every check found, starting with the cluster and version that answered."""
        from cdcgen.pipeline.preflight import check_source, named_error

        try:
            config = self.get_config()
        except Exception as exc:  # the button shows any failure, named, and nothing else
            return False, named_error(exc)
        results = check_source(config)
        failure = next((result for result in results if not result.ok), None)
        if failure is not None:
            return False, failure.detail if failure.check == "connection" else failure.line()
        return True, "; ".join(result.detail for result in results)

    @contextmanager
    def get_client(self, config: PipelineConfig | None = None) -> Iterator[CqlClient]:
        """A connected client, closed on exit (cassandra-driver is imported only here)."""
        from cdcgen.adapters.cql import client_for

        with client_for(config or self.get_config()) as client:
            yield client
