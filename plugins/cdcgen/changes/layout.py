"""Where a table's changes live in the lake, and what is already there.

One Parquet dataset per table, Hive-partitioned, under the lake's ``changes`` folder::

    <lake>/changes/<keyspace>.<table>/date=2026-11-22/generation=<T_g>/window=<s>_<e>/bucket=<k>/

``date`` (UTC day of the write) and ``generation`` are what users filter on; ``window``
and ``bucket`` make each extraction's output its own partitions, so that Spark's dynamic
partition overwrite replaces exactly one window of one bucket and nothing else. Labels
are millisecond UTC times (``20261122T101500.000Z``), which need no escaping.

The bucket count and rule (:mod:`cdcgen.core.lake_buckets`) are recorded in
``_cdcgen_layout.json`` on first write (Spark ignores ``_``-prefixed files) because
changing either would reshuffle streams between buckets and break the resume rule of
:mod:`cdcgen.core.windows`. A lake first written with layout version 1 keeps its CRC-32
buckets.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from cdcgen.adapters.stream_routing import token_function
from cdcgen.core.cdc_log import LogPartitioner, TableRef
from cdcgen.core.lake_buckets import BucketRule, LakeBuckets
from cdcgen.core.windows import LakeWindow, parse_window_label

#: The folder of the lake holding every table's changes (generations live beside it).
CHANGES_DIR = "changes"
LAYOUT_FILE = "_cdcgen_layout.json"
LAYOUT_VERSION = 2  # 2: records the bucket rule (1: CRC-32 buckets)
PARTITION_COLUMNS = ("date", "generation", "window", "bucket")


class LayoutError(Exception):
    """Terminal: the lake directory does not look like this project wrote it."""


def table_root(lake: Path, table: TableRef) -> Path:
    """The dataset of ``table``'s changes in the lake at ``lake`` (``CDCGEN_LAKE_PATH``)."""
    return Path(lake) / CHANGES_DIR / table.qualified


def lake_buckets(root: Path, wanted: int, partitioner: LogPartitioner) -> LakeBuckets:
    """The table's buckets: the recorded count and rule, or ``wanted`` buckets by ring
    slice recorded now; slices of the log ``partitioner``'s tokens. A layout of version
    1 (no rule recorded) hashes stream IDs."""
    count, rule = _recorded_buckets(root, wanted)
    return LakeBuckets(count, rule, token_function(partitioner))


def _recorded_buckets(root: Path, wanted: int) -> tuple[int, BucketRule]:
    path = root / LAYOUT_FILE
    if path.is_file():
        try:
            recorded = json.loads(path.read_text())
            version = int(recorded["version"])
            buckets = int(recorded["buckets"])
            rule = BucketRule(recorded.get("bucket_rule", BucketRule.CRC32.value))
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise LayoutError(f"{path} is unreadable: {exc}") from exc
        if version > LAYOUT_VERSION:
            raise LayoutError(f"{path} has layout version {version}, newer than this one")
        if buckets < 1:
            raise LayoutError(f"{path} records {buckets} buckets")
        return buckets, rule
    root.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    layout = {"version": LAYOUT_VERSION, "buckets": wanted, "bucket_rule": BucketRule.RING}
    tmp.write_text(json.dumps(layout) + "\n")
    tmp.replace(path)
    return wanted, BucketRule.RING


def _value(directory: Path, column: str) -> str:
    name = directory.name
    prefix = column + "="
    if not name.startswith(prefix):
        raise LayoutError(f"{directory}: expected a {column}=... partition directory")
    return name[len(prefix) :]


def list_windows(root: Path) -> list[LakeWindow]:
    """Every (generation, window, bucket) with at least one data file, de-duplicated over dates."""
    found: set[LakeWindow] = set()
    if not root.is_dir():
        return []
    for bucket_dir in root.glob("date=*/generation=*/window=*/bucket=*"):
        if not any(p.suffix == ".parquet" for p in bucket_dir.iterdir()):
            continue
        window_dir = bucket_dir.parent
        generation_dir = window_dir.parent
        try:
            start, end = parse_window_label(_value(window_dir, "window"))
            bucket = int(_value(bucket_dir, "bucket"))
        except ValueError as exc:
            raise LayoutError(f"{bucket_dir}: {exc}") from exc
        found.add(LakeWindow(_value(generation_dir, "generation"), start, end, bucket))
    return sorted(found)


def window_dirs(root: Path, window: LakeWindow) -> list[Path]:
    """The bucket directories of one lake window, one per date it has rows on."""
    pattern = f"date=*/generation={window.generation}/window={window.label}/bucket={window.bucket}"
    return sorted(root.glob(pattern))


def remove_window(root: Path, window: LakeWindow) -> int:
    """Delete one window's files (every date); returns the directories removed."""
    removed = 0
    for directory in window_dirs(root, window):
        shutil.rmtree(directory)
        removed += 1
        for parent in (directory.parent, directory.parent.parent, directory.parent.parent.parent):
            if parent != root and parent.is_dir() and not any(parent.iterdir()):
                parent.rmdir()
    return removed
