"""Ship the ``cdcgen`` package the driver runs to the executors of a Spark cluster.

In ``local[N]`` mode the Python workers are children of the driver's JVM: they inherit
its environment, its working directory and its ``PYTHONPATH``, so they import the same
``cdcgen`` as the driver. On a cluster (standalone, Kubernetes) executors start from
their worker's environment and import whatever that machine has, possibly nothing,
possibly an older release. So each job zips the package it is running, once per driver
process, and adds it with ``SparkContext.addPyFile``: every executor's Python worker
puts the zip ahead of its site-packages, and the code that runs a task is always the
code that planned it. The executors need only a Python with the dependencies (the
same virtualenv path as the driver's, which Spark passes as ``PYSPARK_PYTHON``).
"""

from __future__ import annotations

import atexit
import hashlib
import shutil
import tempfile
import zipfile
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

#: The file name prefix of the shipped zip (``cdcgen-<content hash>.zip``).
ARCHIVE_PREFIX = "cdcgen-"

_built: dict[Path, Path] = {}


def package_dir() -> Path:
    """The directory of the ``cdcgen`` package this process imported."""
    import cdcgen

    return Path(cdcgen.__file__).resolve().parent


def _members(package: Path) -> list[Path]:
    return sorted(
        path
        for path in package.rglob("*")
        if path.is_file() and "__pycache__" not in path.parts and path.suffix != ".pyc"
    )


def build_archive(package: Path | None = None, into: Path | None = None) -> Path:
    """A zip of ``package`` (default: :func:`package_dir`) named by its content's hash.

    Built once per process and package; ``into`` defaults to a temporary directory that
    is removed when the process exits.
    """
    package = package or package_dir()
    if into is None and package in _built and _built[package].exists():
        return _built[package]
    members = _members(package)
    digest = hashlib.sha256()
    for path in members:
        digest.update(str(path.relative_to(package)).encode())
        digest.update(path.read_bytes())
    if into is None:
        into = Path(tempfile.mkdtemp(prefix="cdcgen-ship-"))
        atexit.register(shutil.rmtree, into, True)
    archive = into / f"{ARCHIVE_PREFIX}{digest.hexdigest()[:12]}.zip"
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as zipped:
        for path in members:
            zipped.write(path, Path(package.name) / path.relative_to(package))
    if into is None:  # a caller's own folder is not this process's cache
        _built[package] = archive
    return archive


def is_local(master: str) -> bool:
    """``local``, ``local[N]``, ``local[N,F]``: the tasks' Python workers are children of
    the driver's JVM. Everything else (``local-cluster[...]`` included) starts executor
    processes of their own."""
    return master == "local" or master.startswith("local[")


def ship_package(spark: SparkSession) -> Path | None:
    """Add this process's ``cdcgen`` to ``spark``'s executors unless the master is local.

    Returns the zip shipped (``None`` in local mode); once per Spark application.
    """
    context = spark.sparkContext
    if is_local(context.master or "local"):
        return None
    archive = build_archive()
    if _shipped.get(context.applicationId) != archive:
        context.addPyFile(str(archive))
        _shipped[context.applicationId] = archive
    return archive


_shipped: dict[str, Path] = {}
