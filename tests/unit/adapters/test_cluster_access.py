"""Credentials and TLS settings: read once, never written back, masked, checked early."""

from __future__ import annotations

import os
import pickle
import ssl
import stat
from pathlib import Path

import pytest

from cdcgen.adapters.cluster_access import ClusterAccess, access_for
from cdcgen.airflow.connections import source_connection_for
from cdcgen.airflow.hooks import config_from_connection
from cdcgen.airflow.spark_submit import credentials_env, without_inherited_secrets
from cdcgen.config import PipelineConfig
from cdcgen.errors import ConfigError

SECRET = "pa55-w0rd-xyz"


def test_password_is_masked_and_never_exported() -> None:
    config = PipelineConfig(username="reader", password=SECRET, tls=True)
    assert SECRET not in repr(config) and SECRET not in str(config.model_dump())
    exported = config.to_env()
    assert SECRET not in repr(exported)
    assert not {"CDCGEN_USERNAME", "CDCGEN_PASSWORD", "CDCGEN_PASSWORD_FILE"} & set(exported)
    assert exported["CDCGEN_TLS"] == "true"
    access = access_for(config)
    assert SECRET not in repr(access) and SECRET not in repr(pickle.loads(pickle.dumps(access)))
    assert access.password is not None and access.password.get_secret_value() == SECRET


@pytest.mark.parametrize(
    ("settings", "named"),
    [
        ({"username": "reader"}, "CDCGEN_USERNAME and a password"),
        ({"password": SECRET}, "CDCGEN_USERNAME and a password"),
        (
            {"username": "r", "password": SECRET, "password_file": "/x"},
            "set CDCGEN_PASSWORD or CDCGEN_PASSWORD_FILE, not both",
        ),
        ({"tls_cert_file": "/c.pem"}, "CDCGEN_TLS_CERT_FILE and CDCGEN_TLS_KEY_FILE go together"),
        ({"protocol_version": 6}, "CDCGEN_PROTOCOL_VERSION=6"),
    ],
)
def test_incomplete_access_settings_are_named(settings: dict[str, str], named: str) -> None:
    with pytest.raises(ConfigError) as error:
        PipelineConfig.validated(settings)
    assert named in str(error.value) and SECRET not in str(error.value)


def test_password_file_is_read_and_a_missing_one_named(tmp_path: Path) -> None:
    secret = tmp_path / "pw"
    secret.write_text(SECRET + "\n")
    config = PipelineConfig.from_env(
        {"CDCGEN_USERNAME": "reader", "CDCGEN_PASSWORD_FILE": str(secret)}
    )
    access = access_for(config)
    assert access.password is not None and access.password.get_secret_value() == SECRET
    with pytest.raises(ConfigError, match=r"CDCGEN_PASSWORD_FILE: cannot read .*/gone"):
        access_for(config.with_overrides(password_file=tmp_path / "gone"))
    with pytest.raises(ConfigError, match="CDCGEN_TLS_CA_FILE: cannot read"):
        access_for(config.with_overrides(tls_ca_file=tmp_path / "no-ca.pem"))


def test_connection_login_password_and_tls_extras(tmp_path: Path) -> None:
    ca = tmp_path / "ca.pem"
    ca.write_text("-----BEGIN CERTIFICATE-----\n")
    environment = {"CDCGEN_USERNAME": "env-user", "CDCGEN_PASSWORD_FILE": "/somewhere"}
    config = config_from_connection(
        "10.0.0.1,10.0.0.2",
        9142,
        {"tls": True, "tls_ca_file": str(ca), "protocol_version": 4},
        environment,
        login="reader",
        password=SECRET,
    )
    assert (config.access.username, config.access.password_file) == ("reader", None)
    password = config.access.password
    assert password is not None and password.get_secret_value() == SECRET
    assert config.access.uses_tls and config.access.tls_ca_file == ca
    assert config.protocol_version == 4 and config.access.tls_verify_hostname
    with pytest.raises(ConfigError, match="tls_ca_flie"):
        config_from_connection("h", None, {"tls_ca_flie": "/etc/ca.pem"}, {})
    # And back: the connection a config describes holds the same access.
    connection = source_connection_for(config)
    assert (connection["login"], connection["password"]) == ("reader", SECRET)
    assert connection["extra"]["tls_ca_file"] == str(ca)
    rebuilt = config_from_connection(
        connection["host"],
        connection["port"],
        connection["extra"],
        {},
        login=connection["login"],
        password=connection["password"],
    )
    assert access_for(rebuilt) == access_for(config)


def test_spark_jobs_get_a_private_password_file_that_outlives_nothing() -> None:
    config = PipelineConfig(username="reader", password=SECRET)
    with credentials_env(config) as env:
        path = Path(env["CDCGEN_PASSWORD_FILE"])
        assert env["CDCGEN_USERNAME"] == "reader" and SECRET not in repr(env)
        assert path.read_text() == SECRET
        assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
        assert stat.S_IMODE(os.stat(path.parent).st_mode) == 0o700
        child = PipelineConfig.from_env(env)
        assert access_for(child) == access_for(config)
    assert not path.exists() and not path.parent.exists()
    with credentials_env(PipelineConfig()) as nothing:
        assert nothing == {}


def test_spark_submit_inherits_no_secret_of_the_airflow_process() -> None:
    environ = {
        "AIRFLOW_CONN_CDC_SOURCE": '{"password": "' + SECRET + '"}',
        "AIRFLOW_VAR_API_TOKEN": SECRET,
        "AIRFLOW__CORE__FERNET_KEY": SECRET,
        "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"postgresql://a:{SECRET}@db/airflow",
        "CDCGEN_PASSWORD": SECRET,
        # The Spark Connect server's token: the tasks present it, no submitted job does.
        "CDCGEN_SPARK_CONNECT_TOKEN": SECRET,
        "CDCGEN_SPARK_CONNECT_TOKEN_FILE": "/run/secrets/spark-connect-token",
        "AIRFLOW_HOME": "/opt/airflow",
        "CDCGEN_LAKE_PATH": "/lake",
        "PATH": "/usr/bin",
    }
    before = dict(environ)
    with without_inherited_secrets(environ):
        assert environ == {
            "AIRFLOW_HOME": "/opt/airflow",
            "CDCGEN_LAKE_PATH": "/lake",
            "PATH": "/usr/bin",
        }
    assert environ == before
    with pytest.raises(RuntimeError), without_inherited_secrets(environ):
        raise RuntimeError("spark-submit failed")
    assert environ == before


def test_tls_context_verifies_hostnames_unless_told_not_to(tmp_path: Path) -> None:
    from cdcgen_dev.cassandra.certificates import ensure_certificates

    files = ensure_certificates(tmp_path / "tls", "127.0.0.9")
    config = PipelineConfig(
        tls_ca_file=files.ca, tls_cert_file=files.client_cert, tls_key_file=files.client_key
    )
    access = access_for(config)
    assert access.tls is not None and access.tls.key_pem is not None
    assert "PRIVATE KEY" not in repr(access)
    context = access.driver_options()["ssl_context"]
    assert context.check_hostname and context.verify_mode == ssl.CERT_REQUIRED
    relaxed = access_for(config.with_overrides(tls_verify_hostname=False)).driver_options()
    assert not relaxed["ssl_context"].check_hostname
    assert ClusterAccess().driver_options() == {}


def test_a_bootstrap_job_gets_the_sink_s_settings_planned_and_its_credentials_private() -> None:
    """What the plan hands the job through XCom describes the sink and holds no
    credential; the sink's user and password file come only at execute time, and then
    the job's sink is the sink, not the source (nor the source's credentials)."""
    from cdcgen.replication.replication_run import sink_environment, sink_variables

    source = PipelineConfig(
        contact_points=("10.0.0.1",), username="src", password="x" * 8, local_datacenter="a"
    )
    sink = PipelineConfig(
        contact_points=("10.1.0.1", "10.1.0.2"),
        port=9142,
        username="sink",
        password=SECRET,
        local_datacenter="sink-dc",
    )
    planned = sink_variables(sink)
    assert planned["CDCGEN_SINK_CONTACT_POINTS"] == "10.1.0.1,10.1.0.2"
    assert planned["CDCGEN_SINK_PORT"] == "9142" and planned["CDCGEN_SINK_TLS_CA_FILE"] == ""
    assert SECRET not in repr(planned) and planned["CDCGEN_SINK_USERNAME"] == ""
    job_env = {**source.to_env(), "CDCGEN_USERNAME": "src", "CDCGEN_PASSWORD_FILE": "/s"}
    without = PipelineConfig.from_env(sink_environment({**job_env, **planned}))
    assert without.access.username is None  # not the source's
    assert without.access.password_file is None
    with credentials_env(sink, "CDCGEN_SINK_") as private:
        assert set(private) == {"CDCGEN_SINK_USERNAME", "CDCGEN_SINK_PASSWORD_FILE"}
        job_sink = PipelineConfig.from_env(sink_environment({**job_env, **planned, **private}))
        assert job_sink.contact_points == sink.contact_points and job_sink.port == 9142
        assert access_for(job_sink) == access_for(sink)  # its datacenter, not the source's
    environ = {"CDCGEN_SINK_PASSWORD": SECRET, "PATH": "/usr/bin"}
    with without_inherited_secrets(environ):
        assert environ == {"PATH": "/usr/bin"}


def test_the_access_group_is_nested_for_readers_and_flat_everywhere_else() -> None:
    """One group (config.access), set and overridden by its flat names, read from and
    exported to the same variables; its errors name them and never echo a password."""
    from cdcgen.access_settings import AccessSettings

    config = PipelineConfig.from_env(
        {"CDCGEN_USERNAME": "reader", "CDCGEN_PASSWORD": SECRET, "CDCGEN_TLS": "true"}
    )
    assert isinstance(config.access, AccessSettings) and config.access.username == "reader"
    changed = config.with_overrides(password=None, password_file=Path("/run/secrets/pw"))
    assert changed.access.password is None and changed.access.username == "reader"
    assert changed.port == config.port and config.access.password is not None  # a copy
    assert PipelineConfig.from_env(config.to_env()).access.tls
    assert PipelineConfig.env_names()["tls_ca_file"] == "CDCGEN_TLS_CA_FILE"
    assert AccessSettings.credential_variables() == (
        "CDCGEN_USERNAME",
        "CDCGEN_PASSWORD",
        "CDCGEN_PASSWORD_FILE",
    )
    with pytest.raises(ConfigError, match="CDCGEN_USERNAME and a password") as refused:
        PipelineConfig.from_env({"CDCGEN_PASSWORD": SECRET})
    assert SECRET not in str(refused.value)
    with pytest.raises(ConfigError, match="CDCGEN_TLS_VERIFY_HOSTNAME='maybe'"):
        config.with_overrides(CDCGEN_TLS_VERIFY_HOSTNAME="maybe")


def test_a_local_datacenter_from_the_connection_or_the_environment_routes_there_first() -> None:
    from cassandra.policies import DCAwareRoundRobinPolicy, RoundRobinPolicy, TokenAwarePolicy

    from cdcgen.adapters.cluster_access import ALL_REMOTE_HOSTS

    config = config_from_connection("10.0.0.1", 9042, {"local_datacenter": "dc-east"}, {})
    access = access_for(config)
    assert access.local_datacenter == "dc-east"
    policy = access.routing_policy()
    assert isinstance(policy, TokenAwarePolicy)
    child = policy._child_policy
    assert isinstance(child, DCAwareRoundRobinPolicy) and child.local_dc == "dc-east"
    # The clock checks ask every node of every datacenter: each one stays connected.
    assert child.used_hosts_per_remote_dc == ALL_REMOTE_HOSTS
    from_env = PipelineConfig.from_env({"CDCGEN_LOCAL_DATACENTER": "dc-west"})
    assert access_for(from_env).local_datacenter == "dc-west"
    assert from_env.to_env()["CDCGEN_LOCAL_DATACENTER"] == "dc-west"  # a job gets it too
    assert isinstance(ClusterAccess().routing_policy(), RoundRobinPolicy)  # unset: as before
