"""What a Delta table's log says, read with delta-rs (no JVM): shared by both lakes.

The changes tables (:mod:`cdcgen.changes.layout`) and the generations tables
(:mod:`cdcgen.extract.lake`) are Delta tables; which files hold a version's rows, which
version a write made and where the table stands all come from the log, so files a
killed writer left behind, in no commit, are invisible to every reader.
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from urllib.parse import unquote, urlparse

DELTA_LOG = "_delta_log"


class DeltaLogError(Exception):
    """Terminal: a table's log does not hold what a write or a reader expects."""


def is_delta(root: Path) -> bool:
    """Whether ``root`` is a Delta table: a log with a commit (a first write that died
    before committing leaves an empty ``_delta_log``, which is no table)."""
    if not (Path(root) / DELTA_LOG).is_dir():
        return False
    from deltalake import DeltaTable

    return bool(DeltaTable.is_deltatable(str(root)))


def local_path(uri: str) -> Path:
    """A file URI of the log (or a plain path) as a local path."""
    return Path(unquote(urlparse(uri).path))


def committed_files(
    root: Path, version: int | None = None, predicate: str | None = None
) -> list[Path]:
    """The Parquet files of the table at ``version`` (default: the latest), from its log,
    of the partitions ``predicate`` selects (default: all): files a later commit
    replaced, or a killed job left, are not among them."""
    from deltalake import DeltaTable

    uris = DeltaTable(str(root), version=version).file_uris(file_pruning_predicate=predicate)
    return sorted(local_path(uri) for uri in uris)


def table_version(root: Path) -> int | None:
    """The Delta table's current version; None if it has no commit yet."""
    if not is_delta(root):
        return None
    from deltalake import DeltaTable

    return int(DeltaTable(str(root)).version())


def commit_marker() -> str:
    """A fresh ``userMetadata`` value that finds one write's commit in the log."""
    return f"cdcgen-{uuid.uuid4().hex}"


def commit_version(root: Path, marker: str, since: int | None) -> int:
    """The version of the write whose ``userMetadata`` is ``marker``, the table having
    been at version ``since`` before it (None: no table): exact even when other
    writers committed meanwhile.

    The commits after ``since`` are read one by one from their files, whose names are
    their versions. Not from delta-rs's ``history()``: while another process commits,
    it numbers the commits it lists off by one now and then (seen here with three
    writers, once in a few commits).

    A write that changes nothing (no rows, and no file to replace) makes no commit at
    all in Delta: then the version is the last one there, which holds the same rows
    the write would have.
    """
    version = 0 if since is None else since + 1
    while True:
        try:
            text = (Path(root) / DELTA_LOG / f"{version:020d}.json").read_text(encoding="utf-8")
        except FileNotFoundError:
            break
        if _user_metadata(text) == marker:
            return version
        version += 1
    if version == 0:
        raise DeltaLogError(f"{root}: no Delta table after a write ({marker})")
    if since is None:
        raise DeltaLogError(f"{root}: no commit {marker} in the table's log")
    return version - 1  # nothing committed: the write changed nothing


def _user_metadata(commit: str) -> str | None:
    """The ``userMetadata`` of a commit file's ``commitInfo`` action."""
    for line in commit.splitlines():
        if '"commitInfo"' in line:
            info = json.loads(line).get("commitInfo") or {}
            value = info.get("userMetadata")
            return None if value is None else str(value)
    return None
