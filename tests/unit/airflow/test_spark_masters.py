"""A job's secrets never reach spark-submit's command line, on any Spark master.

The real operator and the real SparkSubmitHook build and start the command; what runs
is a ``spark-submit`` script first on PATH that records its argv and its environment
from ``/proc`` (what ``ps`` and a client-mode driver see) and the password file the
driver would read, then exits as a finished client-mode job does. No Spark JVM starts.
"""

from __future__ import annotations

import json
import os
import stat
import types
from pathlib import Path
from typing import Any

import pytest

from cdcgen.airflow.connections import (
    SOURCE_CONN_ID,
    SPARK_CONN_ID,
    env_var_name,
    source_connection,
)
from cdcgen.airflow.lake_connection import LAKE_CONN_ID
from cdcgen.airflow.spark_masters import DEPLOY_MODE_CONF, KUBERNETES_PROVIDER
from cdcgen.airflow.spark_submit import CdcSparkSubmitOperator, submit_environment

PASSWORD = "cql-pa55word-7d1"
SECRET_KEY = "aws-secret-key-9f3"
SESSION_TOKEN = "aws-session-token-c0ffee"
SECRETS = (PASSWORD, SECRET_KEY, SESSION_TOKEN)
#: What the plan hands the job (through XCom): settings, no credential.
PLANNED = {"CDCGEN_LAKE_PATH": "s3://lake/cdc", "CDCGEN_KEYSPACE": "shop"}

RECORDER = """#!/bin/sh
tr '\\0' '\\n' < /proc/$$/cmdline > "{out}/argv"
tr '\\0' '\\n' < /proc/$$/environ > "{out}/environ"
cat "$CDCGEN_PASSWORD_FILE" > "{out}/password" 2>/dev/null
echo "INFO SparkContext: Successfully stopped SparkContext"
"""


class Submitted:
    """What the recording spark-submit saw, if it ran."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    @property
    def ran(self) -> bool:
        return (self.folder / "argv").exists()

    @property
    def argv(self) -> list[str]:
        return (self.folder / "argv").read_text().splitlines()

    @property
    def environ(self) -> dict[str, str]:
        lines = (self.folder / "environ").read_text().splitlines()
        return dict(line.split("=", 1) for line in lines if "=" in line)

    @property
    def password(self) -> str:
        return (self.folder / "password").read_text()


@pytest.fixture
def submitted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Submitted:
    """A recording spark-submit first on PATH, and the task's connections: the source
    with a password, the lake with an access key and a session token."""
    out, bin_dir = tmp_path / "seen", tmp_path / "bin"
    out.mkdir()
    bin_dir.mkdir()
    script = bin_dir / "spark-submit"
    script.write_text(RECORDER.format(out=out))
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("AIRFLOW_HOME", str(tmp_path / "airflow"))
    monkeypatch.setenv("CDCGEN_SPARK_CLASS_ARCHIVE", "off")
    source = source_connection(("10.0.0.1",), login="reader", password=PASSWORD)
    lake: dict[str, Any] = {"conn_type": "aws", "login": "AKIDEXAMPLE", "password": SECRET_KEY}
    lake["extra"] = {"aws_session_token": SESSION_TOKEN, "region_name": "eu-west-1"}
    monkeypatch.setenv(env_var_name(SOURCE_CONN_ID), json.dumps(source))
    monkeypatch.setenv(env_var_name(LAKE_CONN_ID), json.dumps(lake))
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"):
        monkeypatch.delenv(name, raising=False)  # the task's process gets them from the lake's
    return Submitted(out)


def spark_connection(
    monkeypatch: pytest.MonkeyPatch, master: str, deploy_mode: str | None = None
) -> None:
    extra = {"deploy-mode": deploy_mode} if deploy_mode else {}
    connection = {"conn_type": "spark", "host": master, "extra": extra}
    monkeypatch.setenv(env_var_name(SPARK_CONN_ID), json.dumps(connection))


def with_kubernetes_client(monkeypatch: pytest.MonkeyPatch) -> None:
    """The hook refuses a Kubernetes master unless the cncf-kubernetes provider's client
    imported; that provider is not in this stack, and building and starting a client-mode
    command never calls it, so an empty module stands in for it."""
    from airflow.providers.apache.spark.hooks import spark_submit as hook_module

    stand_in = types.ModuleType("kube_client")
    monkeypatch.setattr(hook_module, "kube_client", stand_in, raising=False)


def run_extract(conf: dict[str, str] | None = None) -> Any:
    operator = CdcSparkSubmitOperator(
        task_id="extract",
        conn_id=SPARK_CONN_ID,
        application="job.py",
        application_args=["--table", "shop.orders"],
        env_vars=dict(PLANNED),
        conf=conf or {"spark.sql.shuffle.partitions": "2"},
    )
    return operator.execute({"ti": types.SimpleNamespace(try_number=1)})


SERVED = [
    pytest.param("local[2]", None, id="local"),
    pytest.param("spark://spark-master:7077", None, id="standalone"),
    pytest.param("spark://spark-master:7077", "client", id="standalone-client"),
    pytest.param("yarn", None, id="yarn"),
    pytest.param("yarn", "client", id="yarn-client"),
    pytest.param("k8s://https://kube.example:6443", None, id="k8s"),
    pytest.param("k8s://https://kube.example:6443", "client", id="k8s-client"),
    # The hook reads any master URL containing "yarn" or "k8s" as YARN or Kubernetes.
    pytest.param("spark://k8s-yarn-master:7077", None, id="standalone-named-k8s-yarn"),
]


@pytest.mark.parametrize(("master", "deploy_mode"), SERVED)
def test_the_driver_gets_settings_and_credentials_and_argv_shows_no_secret(
    submitted: Submitted,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    master: str,
    deploy_mode: str | None,
) -> None:
    spark_connection(monkeypatch, master, deploy_mode)
    if "k8s" in master:
        with_kubernetes_client(monkeypatch)
    before = dict(os.environ)
    run_extract()
    logged = capsys.readouterr().out  # Airflow's structured log goes to stdout
    assert submitted.ran and "Spark-Submit cmd" in logged
    # The driver is spark-submit's process (client mode): its environment is the job's.
    seen = submitted.environ
    assert {name: seen.get(name) for name in PLANNED} == PLANNED
    assert seen["CDCGEN_USERNAME"] == "reader" and submitted.password == PASSWORD
    assert seen["AWS_SECRET_ACCESS_KEY"] == SECRET_KEY
    assert seen["AWS_SESSION_TOKEN"] == SESSION_TOKEN
    assert not any(name.startswith("AIRFLOW_CONN_") for name in seen)
    assert not Path(seen["CDCGEN_PASSWORD_FILE"]).exists()  # removed once the job ended
    # ... and nothing of it is on the command line (ps, /proc/<pid>/cmdline) or logged.
    argv = "\n".join(submitted.argv)
    for secret in SECRETS:
        assert secret not in argv, (master, secret)
        assert secret not in logged, (master, secret)
    assert "AKIDEXAMPLE" not in argv
    assert "appMasterEnv" not in argv and "driverEnv" not in argv
    assert submitted.argv[submitted.argv.index("--master") + 1] == master
    assert f"{DEPLOY_MODE_CONF}=client" in submitted.argv
    assert {name: os.environ.get(name) for name in PLANNED} == {
        name: before.get(name) for name in PLANNED
    }


REFUSED = [
    pytest.param("spark://spark-master:7077", "cluster", id="standalone-cluster"),
    pytest.param("yarn", "cluster", id="yarn-cluster"),
    pytest.param("k8s://https://kube.example:6443", "cluster", id="k8s-cluster"),
    pytest.param("local[2]", "Cluster", id="unknown-mode"),
]


@pytest.mark.parametrize(("master", "deploy_mode"), REFUSED)
def test_cluster_mode_is_refused_by_name_and_nothing_is_submitted(
    submitted: Submitted, monkeypatch: pytest.MonkeyPatch, master: str, deploy_mode: str
) -> None:
    from airflow.sdk.exceptions import AirflowFailException

    spark_connection(monkeypatch, master, deploy_mode)
    if "k8s" in master:
        with_kubernetes_client(monkeypatch)
    with pytest.raises(AirflowFailException) as refused:  # terminal: no retry
        run_extract()
    message = str(refused.value)
    assert f"{SPARK_CONN_ID!r} (master {master})" in message
    assert f"deploy mode {deploy_mode!r}" in message and "client mode" in message
    assert not any(secret in message for secret in SECRETS)
    assert not submitted.ran


def test_a_conf_asking_for_cluster_mode_is_refused(
    submitted: Submitted, monkeypatch: pytest.MonkeyPatch
) -> None:
    from airflow.sdk.exceptions import AirflowFailException

    spark_connection(monkeypatch, "yarn")
    with pytest.raises(AirflowFailException, match=rf"{DEPLOY_MODE_CONF}='cluster'"):
        run_extract({DEPLOY_MODE_CONF: "cluster"})
    assert not submitted.ran


def test_a_kubernetes_master_without_the_provider_is_named(
    submitted: Submitted, monkeypatch: pytest.MonkeyPatch
) -> None:
    from airflow.providers.apache.spark.hooks import spark_submit as hook_module
    from airflow.sdk.exceptions import AirflowFailException

    monkeypatch.delattr(hook_module, "kube_client", raising=False)  # as in this stack
    spark_connection(monkeypatch, "k8s://https://kube.example:6443")
    with pytest.raises(AirflowFailException) as refused:
        run_extract()
    assert KUBERNETES_PROVIDER in str(refused.value) and SPARK_CONN_ID in str(refused.value)
    assert not submitted.ran


def test_the_submit_environment_is_restored_after() -> None:
    environ = {"PATH": "/usr/bin", "CDCGEN_KEYSPACE": "old", "AIRFLOW_CONN_X": PASSWORD}
    before = dict(environ)
    with pytest.raises(RuntimeError), submit_environment({"CDCGEN_KEYSPACE": "shop"}, environ):
        assert environ == {"PATH": "/usr/bin", "CDCGEN_KEYSPACE": "shop"}
        raise RuntimeError("spark-submit failed")
    assert environ == before
    with submit_environment({"AWS_SESSION_TOKEN": SESSION_TOKEN}, environ):
        assert environ["AWS_SESSION_TOKEN"] == SESSION_TOKEN
    assert environ == before
