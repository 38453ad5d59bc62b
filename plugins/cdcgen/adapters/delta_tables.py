"""What a Delta table's log says, read with delta-rs (no JVM): shared by both lakes.

The changes tables (:mod:`cdcgen.changes.layout`) and the generations tables
(:mod:`cdcgen.generation_lake.lake_tables`) are Delta tables; which files hold a version's
rows, which version a write made and where the table stands all come from the log, so files
a killed writer left behind, in no commit, are invisible to every reader.
"""

from __future__ import annotations

import json
import uuid
from typing import TYPE_CHECKING

from cdcgen.adapters.errors import DeltaLogError
from cdcgen.adapters.lake_store import LakeLocation, LakeRoot

if TYPE_CHECKING:
    import pyarrow as pa
    from deltalake import DeltaTable

DELTA_LOG = "_delta_log"


def delta_table(root: LakeRoot, version: int | None = None) -> DeltaTable:
    """The Delta table at ``root`` (a folder or an S3 prefix), at ``version``."""
    from deltalake import DeltaTable

    at = LakeLocation.of(root)
    return DeltaTable(at.uri, version=version, storage_options=at.storage_options())


def is_delta(root: LakeRoot) -> bool:
    """Whether ``root`` is a Delta table: a log with a commit (a first write that died
    before committing leaves an empty ``_delta_log``, which is no table)."""
    at = LakeLocation.of(root)
    if at.is_local and not (at.path / DELTA_LOG).is_dir():
        return False
    from deltalake import DeltaTable

    return bool(DeltaTable.is_deltatable(at.uri, storage_options=at.storage_options()))


def committed_files(
    root: LakeRoot, version: int | None = None, predicate: str | None = None
) -> list[LakeLocation]:
    """The Parquet files of the table at ``version`` (default: the latest), from its log,
    of the partitions ``predicate`` selects (default: all): files a later commit
    replaced, or a killed job left, are not among them."""
    uris = delta_table(root, version).file_uris(file_pruning_predicate=predicate)
    return sorted(LakeLocation.of(uri) for uri in uris)


def table_version(root: LakeRoot) -> int | None:
    """The Delta table's current version; None if it has no commit yet."""
    if not is_delta(root):
        return None
    return int(delta_table(root).version())


def stored_schema(root: LakeRoot) -> pa.Schema | None:
    """The Arrow schema of the table's current version; None if it has no commit yet."""
    if not is_delta(root):
        return None
    import pyarrow as pa

    return pa.schema(delta_table(root).schema())


def commit_marker() -> str:
    """A fresh ``userMetadata`` value that finds one write's commit in the log."""
    return f"cdcgen-{uuid.uuid4().hex}"


def commit_version(root: LakeRoot, marker: str, since: int | None) -> int:
    """The version of the write whose ``userMetadata`` is ``marker``, the table having
    been at version ``since`` before it (None: no table): exact even when other
    writers committed meanwhile.

    The commits after ``since`` are read one by one from their files, whose names are
    their versions. Not from delta-rs's ``history()``: while another process commits,
    it numbers the commits it lists off by one now and then (seen here with three
    writers).

    A write that changes nothing (no rows, and no file to replace) makes no commit at
    all in Delta: then the version is the last one there, which holds the same rows
    the write would have.
    """
    version = 0 if since is None else since + 1
    log = LakeLocation.of(root) / DELTA_LOG
    while True:
        try:
            text = (log / f"{version:020d}.json").read_bytes().decode("utf-8")
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
