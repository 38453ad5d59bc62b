"""Fetch Cassandra's runtime jars from Maven Central into a cache outside the repo.

Nothing binary is committed: ``pom.xml`` next to this file pins
``cassandra-all``, and ``mvn dependency:copy-dependencies`` copies it and its
runtime dependencies into ``<cache>/lib``. A marker file written last makes the
fetch idempotent; an interrupted fetch leaves no marker and is redone.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
import xml.etree.ElementTree as ET
from pathlib import Path

from cdcgen_dev.cassandra.errors import SandboxError
from cdcgen_dev.locking import file_lock

POM_PATH = Path(__file__).with_name("pom.xml")
MARKER_NAME = ".complete"
_POM_NS = {"m": "http://maven.apache.org/POM/4.0.0"}


def pinned_version(pom: Path = POM_PATH) -> str:
    """The ``cassandra.version`` property of the pom: the single place it is pinned."""
    node = ET.parse(pom).getroot().find("m:properties/m:cassandra.version", _POM_NS)
    if node is None or not (node.text or "").strip():
        raise SandboxError(f"{pom} has no <cassandra.version> property")
    return (node.text or "").strip()


CASSANDRA_VERSION = pinned_version()


def cache_dir(version: str = CASSANDRA_VERSION) -> Path:
    """``$CDCGEN_CACHE_DIR/cassandra-<version>``, default root ``~/.cache/cdcgen``."""
    root = os.environ.get("CDCGEN_CACHE_DIR") or "~/.cache/cdcgen"
    return Path(root).expanduser().resolve() / f"cassandra-{version}"


def lib_dir(version: str = CASSANDRA_VERSION) -> Path:
    return cache_dir(version) / "lib"


def jars_ready(version: str = CASSANDRA_VERSION) -> bool:
    """True when a previous fetch completed (marker present and lib dir intact)."""
    cache = cache_dir(version)
    return (cache / MARKER_NAME).is_file() and (cache / "lib").is_dir()


def find_maven() -> str:
    mvn = shutil.which("mvn")
    if mvn is None:
        raise SandboxError(
            "Maven (mvn) is not on PATH; it is needed once to fetch Cassandra's jars "
            "from Maven Central (Debian: apt-get install maven)"
        )
    return mvn


def ensure_jars(version: str = CASSANDRA_VERSION, *, quiet: bool = True) -> Path:
    """Return the lib dir with all runtime jars, fetching them first if needed.

    Concurrent callers (CLI and a test session) serialise on a lock file; the
    second one finds the marker and returns at once.
    """
    cache = cache_dir(version)
    if jars_ready(version):
        return cache / "lib"
    cache.mkdir(parents=True, exist_ok=True)
    with file_lock(cache / ".lock"):
        if not jars_ready(version):
            _fetch(cache, version, quiet=quiet)
    return cache / "lib"


def jamm_jar(lib: Path) -> Path:
    """The jamm agent jar (memory measurement); 5.0 falls back to Unsafe without it."""
    found = sorted(lib.glob("jamm-*.jar"))
    if not found:
        raise SandboxError(f"no jamm-*.jar in {lib}; remove {lib.parent} and fetch again")
    return found[-1]


def _fetch(cache: Path, version: str, *, quiet: bool) -> None:
    """Run Maven into a temporary dir, then move it into place and write the marker."""
    mvn = find_maven()
    staging = cache / f"lib.partial-{os.getpid()}"
    shutil.rmtree(staging, ignore_errors=True)
    command = [
        mvn,
        "-B",
        *(["-q"] if quiet else []),
        "-f",
        str(POM_PATH),
        "dependency:copy-dependencies",
        "-DincludeScope=runtime",
        f"-Dcassandra.version={version}",
        f"-DoutputDirectory={staging}",
    ]
    started = time.monotonic()
    result = subprocess.run(command, capture_output=quiet, text=True, check=False)
    if result.returncode != 0:
        shutil.rmtree(staging, ignore_errors=True)
        output = ((result.stdout or "") + (result.stderr or ""))[-4000:]
        raise SandboxError(
            f"Maven could not fetch cassandra-all {version} (exit {result.returncode})",
            details=output,
        )
    shutil.rmtree(cache / "lib", ignore_errors=True)
    staging.rename(cache / "lib")
    marker = {
        "version": version,
        "jars": sorted(p.name for p in (cache / "lib").glob("*.jar")),
        "fetch_seconds": round(time.monotonic() - started, 1),
    }
    (cache / MARKER_NAME).write_text(json.dumps(marker, indent=1) + "\n")
