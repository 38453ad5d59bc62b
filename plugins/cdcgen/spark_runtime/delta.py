"""Delta Lake on the pinned Spark: its two jars, installed into PySpark's own ``jars/``.

The lake's tables are Delta tables (:mod:`cdcgen.changes.changes_lake`). Spark needs Delta's
jars on the driver's and every executor's class path, and its SQL extension and
catalog configured when the session starts (:data:`SESSION_CONF`).

Why the jars go into PySpark's ``jars/`` folder rather than ``spark.jars.packages``:
resolving the package with Ivy pulls 33 jars, Hadoop, Jackson and log4j among them,
which shadow Spark's own versions, and costs seconds on every session start. Delta
needs only ``delta-spark`` and ``delta-storage``; placed in ``jars/`` they are on the
class path of every Spark this PySpark runs, local sessions, ``spark-submit`` and the
standalone master and workers alike, with no per-job configuration. On a Spark of
your own, put the same jars into its ``jars/`` (``python -m cdcgen.spark_runtime.install
--into $SPARK_HOME/jars``, which adds S3A's and the lake's log store for S3).

The jars come from Maven Central and are checked against the SHA-256 pinned here; a
download is kept in a cache folder (:data:`JAR_CACHE`), so that every further virtualenv
or Spark on the machine is installed from there.
The installer takes any set of pinned jars (``install_jars(jars=...)``): the S3A
connector's set (:mod:`cdcgen.spark_runtime.s3a`) reuses it;
:mod:`cdcgen.spark_runtime.install` installs every set the jobs need.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import shutil
import tempfile
import urllib.request
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from cdcgen.spark_runtime.errors import JarError

DELTA_VERSION = "4.4.0"
#: Where downloaded jars are kept (the installer's ``--cache``), checked by their SHA-256
#: like a download before use.
JAR_CACHE = (
    Path(os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache")) / "cdcgen" / "jars"
)
MAVEN_CENTRAL = "https://repo1.maven.org/maven2"

SESSION_CONF: Mapping[str, str] = {
    "spark.sql.extensions": "io.delta.sql.DeltaSparkSessionExtension",
    "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.delta.catalog.DeltaCatalog",
    # Replaying a table's log uses this many tasks (default 50): two cores need two.
    "spark.databricks.delta.snapshotPartitions": "2",
}
"""What a session needs to read and write Delta tables (static: set at start)."""


@dataclass(frozen=True)
class Jar:
    group: str
    artifact: str
    version: str
    sha256: str

    @property
    def file_name(self) -> str:
        return f"{self.artifact}-{self.version}.jar"

    @property
    def url(self) -> str:
        path = self.group.replace(".", "/")
        return f"{MAVEN_CENTRAL}/{path}/{self.artifact}/{self.version}/{self.file_name}"


JARS = (
    Jar(
        "io.delta",
        "delta-spark_4.1_2.13",
        DELTA_VERSION,
        "75a9400986853c061f5109f012547de2545a5759e5e752e5ef633dabe16a4f10",
    ),
    Jar(
        "io.delta",
        "delta-storage",
        DELTA_VERSION,
        "c46735481fa8e326b0957be02b4420cbcab4b325bb08009b7f2045a95133f1cc",
    ),
)
"""Delta for Spark 4.1 (Scala 2.13) and its log store; Spark provides the rest."""


def pyspark_jars() -> Path:
    """The ``jars/`` folder of the PySpark this Python imports (its ``SPARK_HOME``)."""
    spec = importlib.util.find_spec("pyspark")  # where it is, without importing it
    if spec is None or spec.origin is None:
        raise JarError("pyspark is not installed")
    return Path(spec.origin).resolve().parent / "jars"


def missing_jars(into: Path | None = None, jars: Sequence[Jar] = JARS) -> list[Jar]:
    """The ``jars`` that ``into`` (default: PySpark's ``jars/``) lacks or holds altered."""
    folder = into or pyspark_jars()
    return [jar for jar in jars if not _holds(folder / jar.file_name, jar)]


def install_jars(
    into: Path | None = None, jars: Sequence[Jar] = JARS, cache: Path | None = JAR_CACHE
) -> list[Path]:
    """Put the ``jars`` that ``into`` lacks (default: PySpark's ``jars/``) there, from
    ``cache`` when it holds the pinned content, else from Maven Central (then kept in
    ``cache``; None: no cache); returns those written.

    Each is staged beside its destination and renamed into place only once its SHA-256
    matches, so a killed download never leaves a truncated jar on the class path.
    """
    folder = into or pyspark_jars()
    written = []
    for jar in missing_jars(folder, jars):
        with tempfile.NamedTemporaryFile(dir=folder, suffix=".part", delete=False) as part:
            staged = Path(part.name)
        try:
            cached = cache / jar.file_name if cache is not None else None
            if cached is not None and _cached(cached, jar):
                shutil.copyfile(cached, staged)
            else:
                with urllib.request.urlopen(jar.url, timeout=120) as response:
                    staged.write_bytes(response.read())
            if not _holds(staged, jar):
                raise JarError(f"{jar.url}: content does not match the pinned SHA-256")
            if cached is not None and not _cached(cached, jar):
                _keep(staged, cached)
            staged.replace(folder / jar.file_name)
        except OSError as exc:
            raise JarError(f"{jar.url}: {exc}") from exc
        finally:
            staged.unlink(missing_ok=True)
        written.append(folder / jar.file_name)
    return written


def _cached(cached: Path, jar: Jar) -> bool:
    """Whether the cache holds ``jar``'s pinned content; a cache that cannot be read (not
    a folder, another user's) is a miss, never an error: it costs a download."""
    try:
        return _holds(cached, jar)
    except OSError:
        return False


def _keep(jar: Path, cached: Path) -> None:
    """Copy a checked jar into the cache, whole or not at all, through a file of this
    install's own (two installs at once each write theirs; the last rename wins, and both
    have the pinned content). A cache that cannot be written costs the next install a
    download, nothing more."""
    try:
        cached.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=cached.parent, suffix=".part", delete=False) as part:
            staged = Path(part.name)
        try:
            shutil.copyfile(jar, staged)
            staged.replace(cached)
        finally:
            staged.unlink(missing_ok=True)
    except OSError:
        return


def _holds(path: Path, jar: Jar) -> bool:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest() == jar.sha256
    except FileNotFoundError:
        return False
