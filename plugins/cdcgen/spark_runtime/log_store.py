"""Delta's commits on S3 as conditional PUTs: a log store of our own, built at set-up.

A Delta commit must create ``_delta_log/<version>.json`` only if no writer created it
first. Delta's log store for ``s3a://`` checks, then writes unconditionally, under a
lock that holds only inside one JVM (:func:`cdcgen.spark_runtime.s3a.s3a_conf` says how S3A's
plain ``create`` behaves); Delta's answer for several writers is its DynamoDB log
store, whose jar (``delta-storage-s3-dynamodb``) is not on the package mirror this
project builds from, and which needs a DynamoDB table besides. S3 itself now offers
the primitive: ``If-None-Match: *``. ``ConditionalPutLogStore`` (Java, in ``java/``
beside this module, 80 lines) commits through S3A's builder with that header and
reports a lost race as the ``FileAlreadyExistsException`` Delta expects, so a second
writer retries at the next version or fails on a conflict; delta-rs commits the same
way, so the two engines may write one table.

It is compiled here, against the pinned ``delta-storage`` and PySpark's Hadoop API,
into ``cdcgen-delta-logstore-<digest>.jar`` in the same ``jars/`` as Delta's (named by
its source's digest: a changed source builds a new jar, the old one is removed). It
needs ``javac`` (a JDK 17); ``make setup`` installs one where there is none.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
import zipfile
from pathlib import Path

from cdcgen.spark_runtime.delta import DELTA_VERSION, pyspark_jars
from cdcgen.spark_runtime.errors import JarError
from cdcgen.spark_runtime.spark_settings import SparkSettings

LOG_STORE_CLASS = "cdcgen.delta.ConditionalPutLogStore"
SOURCE = (
    Path(__file__).resolve().parent / "java" / "cdcgen" / "delta" / "ConditionalPutLogStore.java"
)
JAR_PREFIX = "cdcgen-delta-logstore-"
_CLASS_PATH = (f"delta-storage-{DELTA_VERSION}.jar", "hadoop-client-api-*.jar")


def jar_name() -> str:
    digest = hashlib.sha256(SOURCE.read_bytes()).hexdigest()[:16]
    return f"{JAR_PREFIX}{digest}.jar"


def build_log_store(into: Path | None = None) -> Path | None:
    """Compile the log store into ``into`` (default: PySpark's ``jars/``) unless its jar
    is there; returns the jar written, or None."""
    folder = into or pyspark_jars()
    target = folder / jar_name()
    if target.is_file():
        return None
    javac = _javac()
    class_path = [_one(folder, pattern) for pattern in _CLASS_PATH]
    with tempfile.TemporaryDirectory(prefix="cdcgen-logstore-") as scratch:
        classes = Path(scratch) / "classes"
        command = [javac, "--release", "17", "-nowarn", "-d", str(classes)]
        command += ["-cp", os.pathsep.join(str(p) for p in class_path), str(SOURCE)]
        done = subprocess.run(command, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise JarError(f"javac failed on {SOURCE.name}: {done.stderr.strip()}")
        staged = folder / f".{target.name}.part"
        with zipfile.ZipFile(staged, "w", zipfile.ZIP_DEFLATED) as jar:
            jar.writestr("META-INF/MANIFEST.MF", "Manifest-Version: 1.0\r\n\r\n")
            for compiled in sorted(classes.rglob("*.class")):
                jar.write(compiled, compiled.relative_to(classes).as_posix())
        staged.replace(target)
    for old in folder.glob(f"{JAR_PREFIX}*.jar"):
        if old != target:
            old.unlink()
    return target


def _javac() -> str:
    home = SparkSettings.from_env().java_home
    candidates = [str(home / "bin" / "javac")] if home else []
    candidates.append(shutil.which("javac") or "")
    for candidate in candidates:
        if candidate and Path(candidate).is_file():
            return candidate
    raise JarError("javac not found: install a JDK 17 (openjdk-17-jdk-headless), or set JAVA_HOME")


def _one(folder: Path, pattern: str) -> Path:
    found = sorted(folder.glob(pattern))
    if not found:
        raise JarError(f"{folder} has no {pattern}: install Delta's jars first")
    return found[-1]
