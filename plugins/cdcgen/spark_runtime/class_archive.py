"""A class-data-sharing archive for the Spark driver JVM: sessions start sooner.

Before a Spark driver runs anything it loads and verifies many thousands of classes
from Spark's, Delta's and S3A's jars, which on two cores is most of a session's start,
paid by every spark-submit of the DAGs and every session a task starts. The JVM can map
the classes an earlier run loaded from an archive instead (AppCDS): a run with
``-XX:ArchiveClassesAtExit`` writes the archive, later JVMs map it with
``-XX:SharedArchiveFile``. A local session with this project's configuration then
starts, and runs its first job, markedly sooner.

An archive is valid only for the JDK and the class path it was written with, so its
file name carries a key of both (the JDK's ``release`` file, each jar's name and size):
an archive of another JDK or another set of jars is never named. A JVM that still
cannot map one starts without it (``-Xshare:auto``), only slower. The installer
(``python -m cdcgen.spark_runtime.install``) writes the archive last, once every jar is in
place, by running :mod:`cdcgen.spark_runtime.archive_exercise` (a session doing what the jobs
do), and keeps it
only if a JVM started with ``-Xshare:on``, which fails rather than falls back, maps it.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Mapping
from pathlib import Path

from cdcgen.spark_runtime.delta import pyspark_jars
from cdcgen.spark_runtime.errors import ArchiveError
from cdcgen.spark_runtime.spark_settings import SparkSettings

PREFIX = "cdcgen-classes-"
DRIVER_OPTIONS = "spark.driver.extraJavaOptions"
#: Quiet: an archive the JVM cannot map is not an error, only a slower start.
_QUIET = "-Xlog:cds=off -Xlog:cds+dynamic=off"


def spark_home() -> Path:
    """The Spark whose driver JVMs this machine starts: ``$SPARK_HOME`` or PySpark's."""
    return SparkSettings.from_env().spark_home or pyspark_jars().parent


def archive_path(home: Path | None = None) -> Path | None:
    """Where the archive of this JDK and ``home``'s jars is (or would be); None if no JDK."""
    home = home or spark_home()
    release = _jdk_release()
    if release is None or not (home / "jars").is_dir():
        return None
    key = hashlib.sha256(release)
    for jar in sorted((home / "jars").glob("*.jar")):
        key.update(f"{jar.name}:{jar.stat().st_size}\n".encode())
    return home / f"{PREFIX}{key.hexdigest()[:16]}.jsa"


def with_class_archive(conf: Mapping[str, str], home: Path | None = None) -> dict[str, str]:
    """``conf`` whose driver maps the archive, if there is one for this JDK and these jars
    (appended to any ``spark.driver.extraJavaOptions`` already in ``conf``)."""
    if not SparkSettings.from_env().class_archive:
        return dict(conf)
    archive = archive_path(home)
    if archive is None or not archive.is_file():
        return dict(conf)
    options = f"-XX:SharedArchiveFile={archive} {_QUIET}"
    given = conf.get(DRIVER_OPTIONS, "").strip()
    return {**conf, DRIVER_OPTIONS: f"{given} {options}".strip()}


def build_archive(home: Path | None = None) -> Path | None:
    """Write and check the archive of this JDK and ``home``'s jars unless it exists;
    returns the archive written, or None (already there, or no JDK found)."""
    home = home or spark_home()
    target = archive_path(home)
    if target is None or target.is_file():
        return None
    with tempfile.TemporaryDirectory(prefix="cdcgen-class-archive-") as scratch:
        staged = Path(scratch) / "classes.jsa"
        _run_exercise(home, f"-XX:ArchiveClassesAtExit={staged} {_QUIET}")
        if not staged.is_file():
            raise ArchiveError("the JVM wrote no class archive")
        _run_exercise(home, f"-Xshare:on -XX:SharedArchiveFile={staged}")
        part = target.with_name(f".{target.name}.part")
        shutil.move(staged, part)
        part.replace(target)
    for old in home.glob(f"{PREFIX}*.jsa"):
        if old != target:
            old.unlink()
    return target


def _run_exercise(home: Path, java_options: str) -> None:
    names = SparkSettings.env_names()
    env = {
        **os.environ,
        names["spark_home"]: str(home),
        names["class_archive"]: "off",
        "PYSPARK_PYTHON": sys.executable,  # its Python workers need this Python's pyarrow
    }
    env.pop(names["master"], None)  # the archive is of a local driver
    command = [sys.executable, "-m", "cdcgen.spark_runtime.archive_exercise", java_options]
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise ArchiveError(f"{java_options}: {done.stderr.strip()[-2000:]}")


def _jdk_release() -> bytes | None:
    """The ``release`` file of the JDK spark-class runs (``$JAVA_HOME``, else ``java`` on
    the PATH): it names the exact build, which an archive belongs to."""
    home = SparkSettings.from_env().java_home
    java = home / "bin" / "java" if home else None
    if java is None or not java.is_file():
        found = shutil.which("java")
        java = Path(found) if found else None
    if java is None:
        return None
    release = java.resolve().parent.parent / "release"
    return release.read_bytes() if release.is_file() else None
