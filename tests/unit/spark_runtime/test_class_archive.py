"""Which class archive a Spark driver maps: one of this JDK and exactly these jars."""

from __future__ import annotations

from pathlib import Path

import pytest

from cdcgen.spark_runtime.class_archive import DRIVER_OPTIONS, archive_path, with_class_archive


@pytest.fixture
def spark_home(tmp_path: Path) -> Path:
    jars = tmp_path / "spark" / "jars"
    jars.mkdir(parents=True)
    for name in ("spark-core.jar", "delta-spark.jar"):
        (jars / name).write_bytes(b"classes of " + name.encode())
    return tmp_path / "spark"


def test_the_archive_is_named_by_the_jars_it_was_written_with(spark_home: Path) -> None:
    first = archive_path(spark_home)
    assert first is not None and first.parent == spark_home
    assert archive_path(spark_home) == first
    (spark_home / "jars" / "hadoop-aws.jar").write_bytes(b"one more jar")
    added = archive_path(spark_home)
    (spark_home / "jars" / "hadoop-aws.jar").write_bytes(b"the same jar, rebuilt larger")
    changed = archive_path(spark_home)
    assert len({first, added, changed}) == 3
    (spark_home / "jars" / "notes.txt").write_text("not on the class path")
    assert archive_path(spark_home) == changed


def test_the_archive_belongs_to_one_jdk(
    spark_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def jdk(name: str, release: str) -> Path:
        home = tmp_path / name
        (home / "bin").mkdir(parents=True)
        (home / "bin" / "java").write_text("#!/bin/sh\n")
        (home / "release").write_text(release)
        return home

    monkeypatch.setenv("JAVA_HOME", str(jdk("jdk-a", 'JAVA_VERSION="17.0.15"\n')))
    on_a = archive_path(spark_home)
    monkeypatch.setenv("JAVA_HOME", str(jdk("jdk-b", 'JAVA_VERSION="17.0.16"\n')))
    assert archive_path(spark_home) != on_a
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "nowhere"))
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    assert archive_path(spark_home) is None  # no JDK: no archive to name


def test_a_driver_maps_the_archive_only_when_it_exists(
    spark_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("CDCGEN_SPARK_CLASS_ARCHIVE", raising=False)
    conf = {"spark.ui.enabled": "false", DRIVER_OPTIONS: "-Dgiven=1"}
    assert with_class_archive(conf, spark_home) == conf
    archive = archive_path(spark_home)
    assert archive is not None
    archive.write_bytes(b"an archive")
    options = with_class_archive(conf, spark_home)[DRIVER_OPTIONS]
    assert options.startswith(f"-Dgiven=1 -XX:SharedArchiveFile={archive} ")
    assert with_class_archive({}, spark_home)[DRIVER_OPTIONS].startswith("-XX:SharedArchiveFile=")
    monkeypatch.setenv("CDCGEN_SPARK_CLASS_ARCHIVE", "off")
    assert with_class_archive(conf, spark_home) == conf
