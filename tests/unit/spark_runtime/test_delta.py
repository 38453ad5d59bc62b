"""Installing pinned jars: from the cache when it holds the pinned content, else from the
repository (then cached), never a jar whose content is not the pinned one."""

from __future__ import annotations

import functools
import hashlib
import http.server
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from cdcgen.spark_runtime import delta
from cdcgen.spark_runtime.delta import Jar, install_jars
from cdcgen.spark_runtime.errors import JarError

CONTENT = b"PK\x03\x04 a jar"
JAR = Jar("org.example", "example", "1.0", hashlib.sha256(CONTENT).hexdigest())


@pytest.fixture
def repository(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A Maven repository over real HTTP, serving ``JAR``; the folder it serves."""
    root = tmp_path / "maven"
    path = root / "org" / "example" / "example" / "1.0"
    path.mkdir(parents=True)
    (path / JAR.file_name).write_bytes(CONTENT)
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(root))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    monkeypatch.setattr(delta, "MAVEN_CENTRAL", f"http://127.0.0.1:{server.server_port}")
    yield root
    server.shutdown()
    server.server_close()


def test_a_download_is_installed_and_kept_in_the_cache(repository: Path, tmp_path: Path) -> None:
    into, cache = tmp_path / "jars", tmp_path / "cache"
    into.mkdir()
    assert install_jars(into, (JAR,), cache) == [into / JAR.file_name]
    assert (into / JAR.file_name).read_bytes() == CONTENT
    assert (cache / JAR.file_name).read_bytes() == CONTENT
    assert install_jars(into, (JAR,), cache) == []  # there already


def test_a_cached_jar_is_installed_without_the_repository(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(delta, "MAVEN_CENTRAL", "http://127.0.0.1:9")  # nothing listens
    into, cache = tmp_path / "jars", tmp_path / "cache"
    into.mkdir()
    cache.mkdir()
    (cache / JAR.file_name).write_bytes(CONTENT)
    assert install_jars(into, (JAR,), cache) == [into / JAR.file_name]
    assert (into / JAR.file_name).read_bytes() == CONTENT


def test_an_altered_cached_jar_is_downloaded_again_and_replaced(
    repository: Path, tmp_path: Path
) -> None:
    into, cache = tmp_path / "jars", tmp_path / "cache"
    into.mkdir()
    cache.mkdir()
    (cache / JAR.file_name).write_bytes(b"truncated")
    install_jars(into, (JAR,), cache)
    assert (into / JAR.file_name).read_bytes() == CONTENT
    assert (cache / JAR.file_name).read_bytes() == CONTENT


def test_an_altered_download_is_refused_and_nothing_is_installed_or_cached(
    repository: Path, tmp_path: Path
) -> None:
    (repository / "org/example/example/1.0" / JAR.file_name).write_bytes(b"altered")
    into, cache = tmp_path / "jars", tmp_path / "cache"
    into.mkdir()
    with pytest.raises(JarError, match="does not match the pinned SHA-256"):
        install_jars(into, (JAR,), cache)
    assert list(into.iterdir()) == [] and not cache.exists()


def test_a_cache_that_cannot_be_used_costs_a_download_and_nothing_more(
    repository: Path, tmp_path: Path
) -> None:
    into, cache = tmp_path / "jars", tmp_path / "not-a-folder"
    into.mkdir()
    cache.write_text("a file where the cache folder should be")
    assert install_jars(into, (JAR,), cache) == [into / JAR.file_name]
    assert (into / JAR.file_name).read_bytes() == CONTENT
