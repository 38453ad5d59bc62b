"""Where the lake lives (a folder or S3) and how its access is configured."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from cdcgen.adapters.lake_store import LakeLocation, S3Access
from cdcgen.airflow.lake_connection import lake_connection_env, lake_environment
from cdcgen.config import PipelineConfig
from cdcgen.core.errors import LakeUriError
from cdcgen.errors import ConfigError


def test_a_lake_is_an_absolute_folder_or_an_s3_prefix(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    assert LakeLocation.of("lake").uri == str(tmp_path / "lake")
    assert LakeLocation.of(f"file://{tmp_path}/x").uri == str(tmp_path / "x")
    s3 = LakeLocation.of("s3://bucket//team/lake/")
    assert s3.uri == "s3://bucket/team/lake" and not s3.is_local
    assert (s3 / "generations").uri == "s3://bucket/team/lake/generations"
    assert (s3 / "generations").parent == s3 and s3.name == "lake"
    assert s3.spark_uri == "s3a://bucket/team/lake"
    assert LakeLocation.of("s3://bucket").uri == "s3://bucket"
    with pytest.raises(LakeUriError, match="no bucket"):
        LakeLocation.of("s3:///lake")
    with pytest.raises(LakeUriError, match="are not parts of an S3 key"):
        LakeLocation.of("s3://bucket/lake/../other-team")
    with pytest.raises(LakeUriError, match="local folder or s3://"):
        LakeLocation.of("gs://bucket/lake")
    with pytest.raises(TypeError, match="not a local path"):
        Path(s3)
    # The setting: named by its variable when wrong, its text normalised when right.
    with pytest.raises(ConfigError, match="CDCGEN_LAKE_PATH"):
        PipelineConfig.from_env({"CDCGEN_LAKE_PATH": "hdfs://nn/lake"})
    config = PipelineConfig.from_env({"CDCGEN_LAKE_PATH": "s3://bucket/lake/"})
    assert config.lake_path == "s3://bucket/lake"
    assert config.to_env()["CDCGEN_LAKE_PATH"] == "s3://bucket/lake"


def test_first_writer_wins_on_disk_and_on_s3(lake_root: LakeLocation) -> None:
    record = lake_root / "rings" / "r.json"
    assert not record.exists()
    assert record.create_bytes(b"first") and not record.create_bytes(b"second")
    assert record.read_bytes() == b"first" and record.exists()
    assert (lake_root / "rings").exists() and lake_root.children() == ["rings"]
    record.write_bytes(b"replaced whole")
    assert record.read_bytes() == b"replaced whole"
    with pytest.raises(FileNotFoundError):
        (lake_root / "rings" / "missing.json").read_bytes()


def test_s3_access_comes_from_the_environment_and_never_shows_the_secret(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name in ("AWS_REGION", "AWS_DEFAULT_REGION", "AWS_SESSION_TOKEN", "AWS_ENDPOINT_URL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "very-secret-value")
    access = S3Access.from_env()
    assert access.region == "us-east-1" and access.endpoint_url is None
    assert "very-secret-value" not in repr(access)
    options = LakeLocation.of("s3://b/l").storage_options()
    assert options is not None and options["AWS_SECRET_ACCESS_KEY"] == "very-secret-value"
    assert "AWS_ALLOW_HTTP" not in options  # AWS itself: TLS
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9000")
    options = LakeLocation.of("s3://b/l").storage_options() or {}
    assert options["AWS_ALLOW_HTTP"] == "true"
    assert options["AWS_VIRTUAL_HOSTED_STYLE_REQUEST"] == "false"
    assert LakeLocation.of("/tmp/lake").storage_options() is None


def test_the_lake_connection_becomes_the_aws_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    assert lake_environment("AKID", "secret", {"endpoint_url": "http://s3:9000"}) == {
        "AWS_ACCESS_KEY_ID": "AKID",
        "AWS_SECRET_ACCESS_KEY": "secret",
        "AWS_ENDPOINT_URL": "http://s3:9000",
    }
    assert lake_environment(None, None, {"region_name": "eu-west-1"}) == {"AWS_REGION": "eu-west-1"}
    with pytest.raises(ConfigError, match="endpoint"):
        lake_environment("AKID", "secret", {"endpoint": "http://s3:9000"})  # misspelt
    with pytest.raises(ConfigError, match="go together"):
        lake_environment("AKID", None, {})
    # Read by Airflow itself, from the connection's environment-variable form.
    connection = {
        "conn_type": "aws",
        "login": "AKIDCONN",
        "password": "conn-secret",
        "extra": {"region_name": "eu-central-1"},
    }
    monkeypatch.setenv("AIRFLOW_CONN_CDCGEN_LAKE", json.dumps(connection))
    assert lake_connection_env() == {
        "AWS_ACCESS_KEY_ID": "AKIDCONN",
        "AWS_SECRET_ACCESS_KEY": "conn-secret",
        "AWS_REGION": "eu-central-1",
    }
    assert lake_connection_env("cdcgen_lake_absent") == {}


def test_reading_a_configuration_changes_no_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """The hook returns a configuration; the lake's access reaches the task's process
    only through the step that asks for it (use_lake_connection)."""
    from cdcgen.airflow.connections import SOURCE_CONN_ID, connection_env, source_connection
    from cdcgen.airflow.hooks import CdcSourceHook
    from cdcgen.airflow.lake_connection import LAKE_CONN_ID, use_lake_connection

    lake = {"conn_type": "aws", "login": "AKIDCONN", "password": "conn-secret"}
    for name, value in {
        **connection_env(LAKE_CONN_ID, lake),
        **connection_env(SOURCE_CONN_ID, source_connection(("10.0.0.7",))),
    }.items():
        monkeypatch.setenv(name, value)
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        monkeypatch.setenv(name, "")  # recorded, so that the teardown restores it
        monkeypatch.delenv(name)
    before = dict(os.environ)
    config = CdcSourceHook().get_config()
    assert config.contact_points == ("10.0.0.7",)
    assert dict(os.environ) == before
    use_lake_connection()
    assert os.environ["AWS_ACCESS_KEY_ID"] == "AKIDCONN"
