"""Where a table's changes live in the lake, and what is already there.

One Delta table per CDC table, partitioned, under the lake's ``changes`` folder::

    <lake>/changes/<keyspace>.<table>/_delta_log/...     the table's commits
    <lake>/changes/<keyspace>.<table>/date=2026-11-22/generation=<T_g>/window=<s>_<e>/bucket=<k>/

``date`` (UTC day of the write) and ``generation`` are what users filter on; ``window``
and ``bucket`` make each extraction's output its own partitions, so that a job's commit
replaces exactly its windows of its buckets (:func:`window_predicate`) and nothing
else. Labels are millisecond UTC times (``20261122T101500.000Z``), which need no escaping.

What the lake holds is what the table's log says, read with delta-rs (no JVM): files a
killed job left behind belong to no commit and are invisible.

The bucket count and rule (:mod:`cdcgen.core.lake_buckets`) are recorded in
``_cdcgen_layout.json`` on first write (Delta and Spark ignore ``_``-prefixed files)
because changing either would reshuffle streams between buckets and break the resume
rule of :mod:`cdcgen.core.windows`. A lake first written with layout version 1 keeps
its CRC-32 buckets.

Lakes written before tables were Delta are folders of Parquet files with the same
partitions; :func:`convert_to_delta` turns one into a Delta table in place.
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

import pyarrow as pa

from cdcgen.adapters.delta_tables import DELTA_LOG, committed_files, delta_table, is_delta
from cdcgen.adapters.lake_store import LakeLocation, LakeRoot
from cdcgen.adapters.stream_routing import token_function
from cdcgen.changes.errors import LayoutError
from cdcgen.core.cdc_log import LogPartitioner, TableRef
from cdcgen.core.change_batch import (
    BUCKET,
    DATE,
    GENERATION,
    PARTITION_COLUMNS,
    WINDOW,
    WRITE_TIME,
)
from cdcgen.core.lake_buckets import BucketRule, LakeBuckets
from cdcgen.core.windows import LakeWindow, parse_window_label

if TYPE_CHECKING:
    import pyarrow.compute as pc
    import pyarrow.dataset as ds
    from pyspark.sql import SparkSession

#: The folder of the lake holding every table's changes (generations live beside it).
CHANGES_DIR = "changes"
LAYOUT_FILE = "_cdcgen_layout.json"
LAYOUT_VERSION = 2  # 2: records the bucket rule (1: CRC-32 buckets)
PARTITION_TYPES = {
    DATE: pa.string(),
    GENERATION: pa.string(),
    WINDOW: pa.string(),
    BUCKET: pa.int32(),
}
#: The partition columns as ``CONVERT TO DELTA`` declares them for a Parquet lake.
PARTITION_SCHEMA = "date STRING, generation STRING, window STRING, bucket INT"
_LABEL = re.compile(r"[0-9A-Za-z._:-]+")


def table_root(lake: LakeRoot, table: TableRef) -> LakeLocation:
    """The dataset of ``table``'s changes in the lake at ``lake`` (``CDCGEN_LAKE_PATH``)."""
    return LakeLocation.of(lake) / CHANGES_DIR / table.qualified


def lake_buckets(root: LakeRoot, wanted: int, partitioner: LogPartitioner) -> LakeBuckets:
    """The table's buckets: the recorded count and rule, or ``wanted`` buckets by ring
    slice recorded now; slices of the log ``partitioner``'s tokens. A layout of version
    1 (no rule recorded) hashes stream IDs."""
    count, rule = _recorded_buckets(LakeLocation.of(root), wanted)
    return LakeBuckets(count, rule, token_function(partitioner))


def _recorded_buckets(root: LakeLocation, wanted: int) -> tuple[int, BucketRule]:
    """The recorded count and rule; the first writer's record wins (created only if
    there is none), so two first runs cannot bucket one table two ways."""
    path = root / LAYOUT_FILE
    layout = {"version": LAYOUT_VERSION, "buckets": wanted, "bucket_rule": BucketRule.RING}
    if path.create_bytes((json.dumps(layout) + "\n").encode("utf-8")):
        return wanted, BucketRule.RING
    try:
        recorded = json.loads(path.read_bytes())
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


def is_parquet_lake(root: LakeRoot) -> bool:
    """Whether ``root`` holds changes in the Parquet layout of earlier versions (which
    were on local disk only)."""
    root = LakeLocation.of(root)
    if not root.is_local:
        return False
    return not (root.path / DELTA_LOG).is_dir() and any(
        root.path.glob("date=*/generation=*/window=*/bucket=*")
    )


def list_windows(root: LakeRoot) -> list[LakeWindow]:
    """Every (generation, window, bucket) of the table's current version, de-duplicated
    over dates; none for a table not written yet."""
    if is_parquet_lake(root):
        raise LayoutError(
            f"{root} holds changes as plain Parquet from an earlier version of cdcgen: "
            "convert it once with `cdcgen lake migrate` (nothing is lost)"
        )
    if not is_delta(root):
        return []
    found: set[LakeWindow] = set()
    for values in delta_table(root).partitions():
        try:
            start, end = parse_window_label(str(values[WINDOW]))
            found.add(LakeWindow(str(values[GENERATION]), start, end, int(values[BUCKET])))
        except (KeyError, TypeError, ValueError) as exc:
            raise LayoutError(f"{root}: partition {values} is not a window: {exc}") from exc
    return sorted(found)


def table_roots(lake: LakeRoot) -> list[LakeLocation]:
    """Every table folder under ``<lake>/changes``, Delta or not, by name."""
    changes = LakeLocation.of(lake) / CHANGES_DIR
    names = changes.children(folders_only=True)
    return [changes / name for name in names if not name.startswith((".", "_"))]


def read_delta(
    root: LakeRoot,
    version: int | None = None,
    columns: Sequence[str] | None = None,
    where: pc.Expression | None = None,
) -> pa.Table:
    """The table's rows at ``version`` (default: the latest) without a JVM: delta-rs
    resolves the version's files from the log, pyarrow reads them (the rows ``where``
    selects, pushed down to the files' statistics).

    Why not delta-rs's own ``to_pyarrow_table``: reading through its file system from
    Python aborts the interpreter at exit now and then ("terminate called without an
    active exception"); pyarrow's own file systems do not.
    """
    dataset = delta_dataset(root, version)
    return dataset.to_table(columns=None if columns is None else list(columns), filter=where)


def delta_dataset(root: LakeRoot, version: int | None = None) -> ds.Dataset:
    """The table's files at ``version`` (default: the latest) as a pyarrow dataset, for
    readers that scan it batch by batch (:func:`read_delta` reads it whole)."""
    import pyarrow.dataset as ds

    partitions = ds.partitioning(
        pa.schema([pa.field(c, PARTITION_TYPES[c]) for c in PARTITION_COLUMNS]), flavor="hive"
    )
    schema = pa.schema(delta_table(root, version).schema())
    filesystem, base = LakeLocation.of(root).arrow()
    return ds.dataset(
        [file.arrow()[1] for file in committed_files(root, version)],
        schema=schema,
        format="parquet",
        partitioning=partitions,
        partition_base_dir=base,
        filesystem=filesystem,
    )


def window_predicate(windows: Iterable[LakeWindow]) -> str:
    """A SQL predicate true on exactly the rows of ``windows`` (every date), one term
    per generation and window: what a job's commit replaces or a removal deletes."""
    buckets: dict[tuple[str, str], set[int]] = defaultdict(set)
    for window in windows:
        for label in (window.generation, window.label):
            if not _LABEL.fullmatch(label):
                raise LayoutError(f"{label!r} is not a generation or window label")
        buckets[(window.generation, window.label)].add(int(window.bucket))
    if not buckets:
        raise LayoutError("no windows to select")
    return " OR ".join(
        f"(generation = '{generation}' AND window = '{label}' AND "
        f"bucket IN ({', '.join(str(b) for b in sorted(numbers))}))"
        for (generation, label), numbers in sorted(buckets.items())
    )


#: Columns a new table keeps file statistics for: the write time, what readers filter
#: on by time (a stream's files are found by partition, its bucket). Delta's default
#: (the first 32 columns) cost as much time as writing the files; the log's three key
#: columns more CPU than this one, for nothing: Delta keeps no min and max of a binary
#: ``cdc$stream_id``, and those of ``cdc$time``'s text skip nothing (the text of a time
#: UUID does not sort by time).
STATS_COLUMNS = WRITE_TIME
STATS_DEFAULT = "spark.databricks.delta.properties.defaults.dataSkippingStatsColumns"


def convert_to_delta(spark: SparkSession, root: LakeRoot) -> bool:
    """Turn a Parquet lake (:func:`is_parquet_lake`) into a Delta table in place, keeping
    every file: one commit that lists them. False if ``root`` is not a Parquet lake."""
    if not is_parquet_lake(root):
        return False
    folder = LakeLocation.of(root).path
    spark.conf.set(STATS_DEFAULT, STATS_COLUMNS)  # the table's, as a new one gets
    spark.sql(f"CONVERT TO DELTA parquet.`{folder}` PARTITIONED BY ({PARTITION_SCHEMA})")
    return True
