"""Who can reach the Spark Connect server and what it inherits, without starting one.

The server runs its clients' Python: it must listen where configured, refuse to start
without a token, carry the token in no argument, and get none of its launcher's
secrets; a client must present the token without ever putting it in a URL. The running
server's side of each is in ``tests/integration/test_spark_connect.py``.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import SecretStr

from cdcgen.core.errors import ExitCode
from cdcgen.errors import ConfigError
from cdcgen.spark_runtime.connect_channel import AUTHORIZATION, channel_builder, is_loopback
from cdcgen.spark_runtime.connect_server import (
    SPARK_TOKEN_ENV,
    main,
    server_command,
    server_env,
    withheld,
)
from cdcgen.spark_runtime.connect_settings import (
    HOST_ENV,
    TOKEN_ENV,
    TOKEN_FILE_ENV,
    SparkConnectSettings,
)

TOKEN = "tok-" + "k" * 40
#: What a scheduler's or a developer's environment may hold (docker-compose's included).
LAUNCHER_ENV = {
    "PATH": "/usr/bin:/bin",
    "JAVA_HOME": "/usr/lib/jvm/java-17",
    "CDCGEN_LAKE_PATH": "/data/lake",
    "CDCGEN_CONTACT_POINTS": "10.0.0.1",
    "AWS_ACCESS_KEY_ID": "lake-key-id",
    "AWS_SECRET_ACCESS_KEY": "lake-secret",
    "AWS_WEB_IDENTITY_TOKEN_FILE": "/var/run/secrets/eks/token",
    "AIRFLOW__CORE__FERNET_KEY": "fernet-secret",
    "AIRFLOW__API_AUTH__JWT_SECRET": "jwt-secret",
    "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": "postgresql://airflow:pw@db/airflow",
    "AIRFLOW_CONN_CDC_SOURCE": '{"conn_type": "cassandra", "password": "source-pw"}',
    "AIRFLOW_VAR_ANYTHING": "x",
    "AIRFLOW_HOME": "/opt/airflow",
    "CDCGEN_USERNAME": "cdcgen",
    "CDCGEN_PASSWORD": "source-pw",
    "CDCGEN_PASSWORD_FILE": "/run/secrets/pw",
    "CDCGEN_SINK_PASSWORD": "sink-pw",
    "CDCGEN_TLS_KEY_FILE": "/etc/cdcgen/client.key",
    "CDCGEN_SPARK_CONNECT_TOKEN": TOKEN,
    "PGPASSWORD": "pg-pw",
    "GITHUB_TOKEN": "gh",
    "SSH_AUTH_SOCK": "/tmp/agent",
}
KEPT = {"PATH", "JAVA_HOME", "CDCGEN_LAKE_PATH", "CDCGEN_CONTACT_POINTS"}
LAKE_ACCESS = {"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_WEB_IDENTITY_TOKEN_FILE"}


# --- the server -------------------------------------------------------------------------


def test_the_server_listens_on_the_configured_address_loopback_by_default() -> None:
    assert SparkConnectSettings.from_env({}).host == "127.0.0.1"
    host = SparkConnectSettings.from_env({HOST_ENV: "spark-connect"}).host
    command = server_command(15099, "local[2]", host, home=Path("/opt/spark"))
    assert "spark.connect.grpc.binding.address=spark-connect" in command
    assert "spark.driver.bindAddress=spark-connect" in command  # its other ports too
    assert "spark.connect.grpc.binding.port=15099" in command


def test_the_token_is_in_no_argument_of_the_server_only_in_its_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(TOKEN_ENV, TOKEN)
    command = server_command(15099, "local[2]", "127.0.0.1", home=Path("/opt/spark"))
    assert not any(TOKEN in part for part in command)
    assert not any("authenticate.token" in part for part in command)
    env = server_env(SecretStr(TOKEN), LAUNCHER_ENV)
    assert env[SPARK_TOKEN_ENV] == TOKEN
    assert [name for name, value in env.items() if TOKEN in value] == [SPARK_TOKEN_ENV]


def test_the_server_inherits_no_airflow_variable_and_no_credential_but_the_lakes() -> None:
    env = server_env(SecretStr(TOKEN), LAUNCHER_ENV)
    assert set(env) == KEPT | LAKE_ACCESS | {
        "PYSPARK_PYTHON",
        "PYSPARK_DRIVER_PYTHON",
        SPARK_TOKEN_ENV,
    }
    assert not [name for name in env if name.startswith("AIRFLOW")]
    secrets = ("fernet-secret", "jwt-secret", "source-pw", "sink-pw", "pg-pw", "airflow:pw")
    assert not [name for name, value in env.items() for s in secrets if s in value]


@pytest.mark.parametrize(
    "name",
    ["AIRFLOW_UID", "AIRFLOW__CORE__FERNET_KEY", "CDCGEN_SINK_PASSWORD_FILE",
     "CDCGEN_SINK_USERNAME", "DATABASE_DSN", "MY_API_KEY", "XAUTHORITY", SPARK_TOKEN_ENV],
)  # fmt: skip
def test_credentials_of_any_name_are_withheld(name: str) -> None:
    assert withheld(name)


def test_the_server_does_not_start_without_a_token(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv(TOKEN_ENV, raising=False)
    monkeypatch.delenv(TOKEN_FILE_ENV, raising=False)

    def started(*args: object) -> None:
        raise AssertionError("the server was started without a token")

    monkeypatch.setattr("os.execve", started)  # were it to start, this process would go
    assert main(["--port", "15099"]) == ExitCode.TERMINAL
    error = capsys.readouterr().err
    assert f"{TOKEN_ENV} or {TOKEN_FILE_ENV}: not set" in error
    assert error.count("\n") == 1


@pytest.mark.parametrize(
    ("environ", "message"),
    [
        ({TOKEN_ENV: "short-secret"}, "shorter than 16"),
        ({TOKEN_ENV: "a-token with a space-in-it"}, "printable ASCII only"),
        ({TOKEN_ENV: "a-token-with-a-newline\nin-it"}, "printable ASCII only"),
        ({TOKEN_ENV: TOKEN, TOKEN_FILE_ENV: "/run/secrets/t"}, "not both"),
        ({HOST_ENV: "0.0.0.0 --conf x=y"}, "host name or an IP address"),
    ],
)
def test_a_bad_token_or_address_is_refused_by_name_and_never_echoed(
    environ: dict[str, str], message: str
) -> None:
    with pytest.raises(ConfigError, match=message) as caught:
        SparkConnectSettings.from_env(environ).required_secret()
    text = str(caught.value)
    assert "CDCGEN_SPARK_CONNECT_" in text
    for name in (TOKEN_ENV,):
        if name in environ:
            assert environ[name] not in text


def test_a_token_file_is_read_and_an_empty_or_missing_one_named(tmp_path: Path) -> None:
    path = tmp_path / "token"
    path.write_text(TOKEN + "\n")
    secret = SparkConnectSettings.from_env({TOKEN_FILE_ENV: str(path)}).required_secret()
    assert secret.get_secret_value() == TOKEN
    path.write_text("\n")
    with pytest.raises(ConfigError, match=f"{TOKEN_FILE_ENV}: .*shorter than 16"):
        SparkConnectSettings.from_env({TOKEN_FILE_ENV: str(path)}).required_secret()
    with pytest.raises(ConfigError, match=f"{TOKEN_FILE_ENV}: cannot read"):
        SparkConnectSettings.from_env({TOKEN_FILE_ENV: str(tmp_path / "no")}).secret()


def test_the_token_never_travels_as_a_setting() -> None:
    settings = SparkConnectSettings.from_env({TOKEN_ENV: TOKEN, HOST_ENV: "10.1.2.3"})
    assert settings.to_env() == {HOST_ENV: "10.1.2.3"}
    assert TOKEN not in repr(settings)


# --- the client -------------------------------------------------------------------------


@pytest.mark.parametrize("url", ["sc://127.0.0.1:15002", "sc://localhost:1", "sc://[::1]:15002"])
def test_a_loopback_server_gets_the_token_as_a_header_on_a_plain_channel(url: str) -> None:
    builder = channel_builder(url, SecretStr(TOKEN))
    assert (AUTHORIZATION, f"Bearer {TOKEN}") in builder.metadata()
    assert not builder.secure  # no TLS handshake the server could not answer
    assert TOKEN not in url


def test_a_private_network_server_gets_it_when_the_url_says_no_tls() -> None:
    builder = channel_builder("sc://spark-connect:15002/;use_ssl=false", SecretStr(TOKEN))
    assert (AUTHORIZATION, f"Bearer {TOKEN}") in builder.metadata()
    assert not builder.secure


def test_a_server_behind_tls_gets_it_as_pysparks_token() -> None:
    builder = channel_builder("sc://connect.example.com:443/;use_ssl=true", SecretStr(TOKEN))
    assert builder.secure and builder.token == TOKEN
    assert AUTHORIZATION not in dict(builder.metadata())


def test_a_token_for_another_host_without_a_word_on_tls_is_refused() -> None:
    with pytest.raises(ConfigError, match=r";use_ssl=true .*;use_ssl=false") as caught:
        channel_builder("sc://10.0.0.7:15002", SecretStr(TOKEN))
    assert TOKEN not in str(caught.value)


def test_a_url_carrying_a_token_is_refused_without_echoing_it() -> None:
    with pytest.raises(ConfigError, match=f"give it as {TOKEN_ENV}") as caught:
        channel_builder(f"sc://127.0.0.1:15002/;token={TOKEN}", None)
    assert TOKEN not in str(caught.value)


def test_a_client_without_a_token_sends_no_authorization() -> None:
    builder = channel_builder("sc://127.0.0.1:15002", None)
    assert AUTHORIZATION not in dict(builder.metadata())


@pytest.mark.parametrize(
    ("host", "expected"),
    [("127.0.0.1", True), ("127.3.4.5", True), ("::1", True), ("[::1]", True),
     ("localhost", True), ("10.0.0.1", False), ("spark-connect", False),
     ("localhost.example.com", False)],
)  # fmt: skip
def test_loopback_means_this_machine_only(host: str, expected: bool) -> None:
    assert is_loopback(host) is expected
