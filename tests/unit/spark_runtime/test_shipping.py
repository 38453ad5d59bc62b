"""What a Spark cluster's executors receive: the package zip, and paths that mean the same
file in every process (the standalone-cluster DAG runs are in tests/e2e)."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest

from cdcgen.config import PipelineConfig
from cdcgen.spark_runtime.shipping import ARCHIVE_PREFIX, build_archive, is_local, package_dir


def _package(root: Path, body: str) -> Path:
    package = root / "cdcgen"
    (package / "sub").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "sub" / "__init__.py").write_text(body)
    (package / "py.typed").write_text("")
    (package / "__pycache__").mkdir()
    (package / "__pycache__" / "x.cpython-311.pyc").write_bytes(b"stale")
    return package


def test_the_zip_holds_the_package_under_its_name_without_bytecode(tmp_path: Path) -> None:
    archive = build_archive(_package(tmp_path / "src", "A = 1\n"), into=tmp_path)
    assert archive.name.startswith(ARCHIVE_PREFIX) and archive.suffix == ".zip"
    with zipfile.ZipFile(archive) as zipped:
        assert sorted(zipped.namelist()) == [
            "cdcgen/__init__.py",
            "cdcgen/py.typed",
            "cdcgen/sub/__init__.py",
        ]
        assert zipped.read("cdcgen/sub/__init__.py") == b"A = 1\n"


def test_the_zip_is_named_by_its_content(tmp_path: Path) -> None:
    one = build_archive(_package(tmp_path / "a", "A = 1\n"), into=tmp_path / "a")
    same = build_archive(_package(tmp_path / "b", "A = 1\n"), into=tmp_path / "b")
    other = build_archive(_package(tmp_path / "c", "A = 2\n"), into=tmp_path / "c")
    assert one.name == same.name != other.name


def test_the_running_package_is_what_ships(tmp_path: Path) -> None:
    archive = build_archive(into=tmp_path)
    with zipfile.ZipFile(archive) as zipped:
        names = set(zipped.namelist())
    assert "cdcgen/spark_runtime/shipping.py" in names and "cdcgen/changes/read_task.py" in names
    assert package_dir().name == "cdcgen"


@pytest.mark.parametrize(
    ("master", "local"),
    [
        ("local", True),
        ("local[2]", True),
        ("local[*]", True),
        ("local[2,3]", True),
        ("local-cluster[2,1,1024]", False),
        ("spark://10.0.0.1:7077", False),
        ("k8s://https://kubernetes:443", False),
        ("yarn", False),
    ],
)
def test_only_cluster_masters_get_the_package(master: str, local: bool) -> None:
    assert is_local(master) is local


def test_lake_and_report_paths_are_absolute(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    config = PipelineConfig.from_env({"CDCGEN_LAKE_PATH": "lake", "CDCGEN_REPORT_DIR": "r/x"})
    assert config.lake_path == str(tmp_path / "lake")
    assert config.report_dir == tmp_path / "r" / "x"
    # The environment form a task hands its Spark job carries the absolute path.
    assert config.to_env()["CDCGEN_LAKE_PATH"] == str(tmp_path / "lake")
