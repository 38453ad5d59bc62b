"""The Airflow home, the connections it defines, and the hook that reads them."""

from __future__ import annotations

import configparser
import json
from datetime import timedelta
from pathlib import Path

import pytest

from cdcgen.airflow.connections import (
    SOURCE_CONN_ID,
    SPARK_CONN_ID,
    connection_env,
    env_var_name,
    source_connection,
)
from cdcgen.airflow.hooks import config_from_connection
from cdcgen.core.generation import SourceMode
from cdcgen.errors import ConfigError
from cdcgen_dev.airflow_home import airflow_env, write_config
from cdcgen_dev.paths import REPO_ROOT


def test_config_points_airflow_at_this_repository(tmp_path: Path) -> None:
    path = write_config(tmp_path)
    cfg = configparser.ConfigParser(interpolation=None)
    cfg.read(path)
    assert cfg["core"]["dags_folder"] == str(REPO_ROOT / "dags")
    # No plugins folder of ours: the report plugin comes with the provider, as deployed.
    assert not cfg.has_option("core", "plugins_folder")
    assert cfg["core"]["load_examples"] == "False"
    # The metadata DB is left to Airflow's {AIRFLOW_HOME} default: a copied home works.
    assert not cfg.has_option("database", "sql_alchemy_conn")
    secrets = (cfg["core"]["fernet_key"], cfg["api_auth"]["jwt_secret"])
    write_config(tmp_path)
    again = configparser.ConfigParser(interpolation=None)
    again.read(path)
    assert (again["core"]["fernet_key"], again["api_auth"]["jwt_secret"]) == secrets


def test_the_config_holding_the_secrets_is_readable_by_its_owner_only(tmp_path: Path) -> None:
    path = write_config(tmp_path)
    assert path.stat().st_mode & 0o777 == 0o600
    path.chmod(0o644)  # a home written by an earlier version
    write_config(tmp_path)
    assert path.stat().st_mode & 0o777 == 0o600


def test_env_defines_both_connections_as_json(tmp_path: Path) -> None:
    env = airflow_env(tmp_path, base={"PATH": "/usr/bin"})
    assert env["AIRFLOW_HOME"] == str(tmp_path)
    assert env["PATH"].endswith(":/usr/bin")  # the venv's bin first: spark-submit by name
    spark = json.loads(env[env_var_name(SPARK_CONN_ID)])
    assert spark == {"conn_type": "spark", "host": "local[2]"}
    source = json.loads(env[env_var_name(SOURCE_CONN_ID)])
    assert source["conn_type"] == "cassandra" and source["port"] == 9042


def test_spark_connection_is_local_not_yarn(monkeypatch: pytest.MonkeyPatch) -> None:
    from airflow.providers.apache.spark.hooks.spark_submit import SparkSubmitHook

    for key, value in airflow_env(REPO_ROOT / "var" / "airflow").items():
        if key.startswith("AIRFLOW_CONN_"):
            monkeypatch.setenv(key, value)
    assert SparkSubmitHook(conn_id=SPARK_CONN_ID)._connection["master"] == "local[2]"


def test_connection_fields_and_extras_become_the_config() -> None:
    config = config_from_connection(
        "10.0.0.1,10.0.0.2",
        19042,
        {
            "source_mode": "gossip",
            "source_keyspace_prefix": "",
            "clock_source": "cql",
            "leeway_seconds": 2.5,
            "cdc_tables": "shop.orders",
        },
        env={"CDCGEN_TARGET_KEYSPACE": "published", "CDCGEN_SOURCE_MODE": "raft"},
    )
    assert config.contact_points == ("10.0.0.1", "10.0.0.2")
    assert config.port == 19042
    assert config.source_mode is SourceMode.GOSSIP  # the connection wins over the env
    assert config.source_keyspace_prefix == ""
    assert config.clock_source == "cql"
    assert config.generation_leeway == timedelta(seconds=2.5)
    assert config.target_keyspace == "published"  # deployment settings come from the env
    assert config.extra["cdc_tables"] == "shop.orders"


def test_a_misspelt_extra_is_an_error() -> None:
    with pytest.raises(ConfigError, match="source_mod"):
        config_from_connection("h", 9042, {"source_mod": "gossip"}, env={})


def test_hook_reads_the_connection_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    from cdcgen.airflow.hooks import CdcSourceHook

    conn = source_connection(("127.0.0.7",), 9043, {"source_mode": "v1"})
    for key, value in connection_env(SOURCE_CONN_ID, conn).items():
        monkeypatch.setenv(key, value)
    config = CdcSourceHook().get_config(lake_path=Path("/tmp/lake"))
    assert config.contact_points == ("127.0.0.7",)
    assert config.port == 9043
    assert config.source_mode is SourceMode.V1
    assert config.lake_path == "/tmp/lake"
