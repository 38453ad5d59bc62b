"""The lake's changes of one table as a replication run reads them: in time slices of
bounded size, whatever the backlog (no JVM; :class:`cdcgen.ports.LakeChanges`).

A run applies the changes with write time in ``[since, until)`` at the lake version that
holds everything up to the watermark. After a long pause that range can hold more rows
than fit in memory, and the lake's files are not in time order (a window of a cold
start spans the whole backlog, its rows ordered by stream), so the range is cut into
consecutive time slices of at most ``slice_rows`` rows, the sink's own changes
(active-active) counted in:

1. **count**: the write times alone are scanned, batch by batch, into a histogram of
   fixed bins over the range; bins holding more than a slice are cut finer by another
   scan of just their rows (one level per scan, a few at most);
2. **spill**: when more than one slice results, one scan of the rows writes each batch's
   rows into the Arrow file of its slice in a spill folder (deleted at the end);
3. **slices**: each slice is read back alone and put in time order (write time, then
   stream, ``cdc$time`` and ``cdc$batch_seq_no``, so each CDC batch's rows stay
   together in the order they were logged).

Slices follow each other in time and each is in time order, so every stream's and
every key's changes come in order (a key's changes move to another stream at a
generation switch: ordering by stream first would not keep them so), and a CDC batch
(one ``cdc$time``, one write time) is never cut. Once a slice is
applied, every change before its end is, which is what the sink's consistency point
records. A range that fits in one slice is read directly, without spilling.
"""

from __future__ import annotations

import logging
import shutil
import tempfile
from collections.abc import Generator, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from itertools import pairwise
from pathlib import Path
from typing import TYPE_CHECKING

from cdcgen.adapters.delta_tables import delta_table, is_delta
from cdcgen.changes.layout import delta_dataset, table_root
from cdcgen.core.cdc_log import BATCH_SEQ_NO, STREAM_ID, TIME, TableRef
from cdcgen.core.change_batch import DATE, NOT_REPLAYED, WRITE_TIME
from cdcgen.core.time import from_micros, to_micros
from cdcgen.ports import ChangeSlice

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.dataset as ds

    from cdcgen.adapters.lake_store import LakeRoot

log = logging.getLogger(__name__)

#: Bins of the first counting scan over the range (a slice edge falls on a bin edge),
#: and of each further scan of a bin that held more than a slice.
FIRST_BINS = 65_536
FINER_BINS = 256
#: Spill files open at once.
OPEN_FILES = 256
#: Rows per batch read from the lake's files.
SCAN_ROWS = 32_768


@dataclass(frozen=True)
class LakeSource:
    """One table's changes in the lake, at a version (None: the latest)."""

    root: LakeRoot
    version: int | None = None

    def dataset(self) -> ds.Dataset | None:
        """None while the table has no commit (no change extracted yet)."""
        return delta_dataset(self.root, self.version) if is_delta(self.root) else None


class LakeChangeSlices:
    """The changes lake at ``lake`` as a replication run reads it; ``peer_lake``: where
    the sink tables' own changes are (active-active; default: this lake)."""

    def __init__(
        self,
        lake: LakeRoot,
        slice_rows: int,
        *,
        peer_lake: LakeRoot | None = None,
        spill_dir: Path | None = None,
    ) -> None:
        self.lake = lake
        self.peer_lake = peer_lake or lake
        self.slice_rows = slice_rows
        self.spill_dir = spill_dir

    def column_types(self, table: TableRef) -> dict[str, pa.DataType]:
        import pyarrow as pa

        root = table_root(self.lake, table)
        if not is_delta(root):
            return {}
        return {f.name: f.type for f in pa.schema(delta_table(root).schema())}

    def slices(
        self,
        table: TableRef,
        version: int | None,
        since: datetime,
        until: datetime,
        peer: TableRef | None = None,
    ) -> Generator[ChangeSlice, None, None]:
        peer_root = None if peer is None else table_root(self.peer_lake, peer)
        return change_slices(
            LakeSource(table_root(self.lake, table), version),
            since,
            until,
            self.slice_rows,
            peer=None if peer_root is None or not is_delta(peer_root) else LakeSource(peer_root),
            spill_dir=self.spill_dir,
        )


def time_filter(since: datetime, until: datetime) -> pc.Expression:
    """Write time in ``[since, until)``, pruned by the ``date`` partitions first."""
    import pyarrow as pa
    import pyarrow.compute as pc

    stamp = pa.timestamp("us", tz="UTC")
    return (
        (pc.field(WRITE_TIME) >= pa.scalar(since, stamp))
        & (pc.field(WRITE_TIME) < pa.scalar(until, stamp))
        & (pc.field(DATE) >= since.date().isoformat())
        & (pc.field(DATE) <= until.date().isoformat())
    )


def change_slices(
    source: LakeSource,
    since: datetime,
    until: datetime,
    slice_rows: int,
    *,
    peer: LakeSource | None = None,
    spill_dir: Path | None = None,
) -> Generator[ChangeSlice, None, None]:
    """The changes of ``[since, until)`` in consecutive slices of at most ``slice_rows``
    rows (source and peer together; one instant holding more is one larger slice)."""
    if until <= since:
        return
    datasets = [source.dataset(), peer.dataset() if peer else None]
    present = [d for d in datasets if d is not None]
    if datasets[0] is None:
        return  # no change of the table extracted yet
    lo, hi = to_micros(since), to_micros(until)
    edges = slice_edges(present, lo, hi, slice_rows)
    if len(edges) == 2:
        yield _slice(since, until, *(_read(d, since, until) for d in datasets))
        return
    log.info("%d slices of at most %d rows over %s .. %s", len(edges) - 1, slice_rows, since, until)
    folder = Path(tempfile.mkdtemp(prefix="cdcgen-replication-", dir=spill_dir))
    try:
        files = [_spill(d, edges, folder, str(n)) if d else None for n, d in enumerate(datasets)]
        for number, (low, high) in enumerate(pairwise(edges)):
            tables = [None if f is None else _read_spilled(f[number]) for f in files]
            yield _slice(from_micros(low), from_micros(high), *tables)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def slice_edges(datasets: Sequence[ds.Dataset], lo: int, hi: int, slice_rows: int) -> list[int]:
    """Microsecond edges ``lo = e0 < e1 < ... = hi`` of slices of at most ``slice_rows``
    rows of ``datasets`` together (one microsecond holding more is a slice of its own),
    from histograms of their write times."""
    bins = _histogram(datasets, [(lo, hi)], FIRST_BINS)
    while heavy := [(low, high) for low, high, n in bins if n > slice_rows and high - low > 1]:
        finer = _histogram(datasets, heavy, FINER_BINS)
        refined = [b for b in bins if (b[0], b[1]) not in set(heavy)] + finer
        bins = sorted(refined)
    edges = [lo]
    total = 0
    for low, _, count in bins:
        if total and total + count > slice_rows:
            edges.append(low)
            total = 0
        total += count
    return [*edges, hi]


Bin = tuple[int, int, int]  # (low, high, rows): rows with write time in [low, high) µs


def _histogram(
    datasets: Sequence[ds.Dataset], spans: Sequence[tuple[int, int]], per_span: int
) -> list[Bin]:
    """Each of the disjoint, ordered ``spans`` cut into ``per_span`` equal bins (at
    least 1 µs), with the rows of ``datasets`` counted in each: one scan of the write
    times of each dataset."""
    import numpy as np

    starts = np.array([s for s, _ in spans], dtype=np.int64)
    ends = np.array([e for _, e in spans], dtype=np.int64)
    widths = np.maximum(1, -(-(ends - starts) // per_span))
    counts = np.zeros(len(spans) * per_span, dtype=np.int64)
    where = time_filter(from_micros(int(starts[0])), from_micros(int(ends[-1])))
    for dataset in datasets:
        for batch in _scan(dataset, where, [WRITE_TIME]):
            micros = _micros(batch.column(0))
            span = np.searchsorted(starts, micros, side="right") - 1
            inside = (span >= 0) & (micros < ends[np.maximum(span, 0)])
            span, micros = span[inside], micros[inside]
            index = span * per_span + (micros - starts[span]) // widths[span]
            counts += np.bincount(index, minlength=counts.size)
    bins = []
    for number, (start, end) in enumerate(spans):
        width = int(widths[number])
        for i in range(per_span):
            low = start + i * width
            if low >= end:
                break
            bins.append((low, min(end, low + width), int(counts[number * per_span + i])))
    return bins


def _scan(dataset: ds.Dataset, where: pc.Expression, columns: list[str] | None = None
          ) -> Iterator[pa.RecordBatch]:  # fmt: skip
    """``dataset``'s rows ``where`` selects, a batch at a time, one file at a time:
    memory holds one batch (and the row group it comes from), whatever the table."""
    scanner = dataset.scanner(
        columns=columns,
        filter=where,
        batch_size=SCAN_ROWS,
        batch_readahead=1,
        fragment_readahead=1,
        use_threads=False,
    )
    for batch in scanner.to_batches():
        if batch.num_rows:
            yield batch


def _micros(column: pa.Array) -> npt.NDArray[np.int64]:
    import numpy as np
    import pyarrow as pa

    return np.asarray(column.cast(pa.int64()).to_numpy(zero_copy_only=False), dtype=np.int64)


def _spill(dataset: ds.Dataset, edges: Sequence[int], folder: Path, tag: str) -> list[Path]:
    """``dataset``'s rows of each slice in an Arrow file of its own (in slice order),
    written batch by batch; at most :data:`OPEN_FILES` files open at once (a range of
    more slices is scanned once per group of them)."""
    import numpy as np
    import pyarrow as pa

    paths = [folder / f"{tag}-{n:06d}.arrow" for n in range(len(edges) - 1)]
    for first in range(0, len(paths), OPEN_FILES):
        last = min(first + OPEN_FILES, len(paths))
        group = np.asarray(edges[first : last + 1], dtype=np.int64)
        where = time_filter(from_micros(int(group[0])), from_micros(int(group[-1])))
        writers: dict[int, pa.ipc.RecordBatchFileWriter] = {}
        try:
            for batch in _scan(dataset, where):
                number = np.searchsorted(group, _micros(batch.column(WRITE_TIME)), "right") - 1
                order = np.argsort(number, kind="stable")
                ordered = batch.take(pa.array(order))
                offsets = np.concatenate(
                    ([0], np.cumsum(np.bincount(number, minlength=last - first)))
                )
                for n in map(int, np.flatnonzero(np.diff(offsets))):
                    if n not in writers:
                        writers[n] = pa.ipc.new_file(paths[first + n], batch.schema)
                    begin, end = int(offsets[n]), int(offsets[n + 1])
                    part = ordered.slice(begin, end - begin)
                    writers[n].write_batch(part)
        finally:
            for writer in writers.values():
                writer.close()
    return paths


def _read_spilled(path: Path) -> pa.Table | None:
    """A slice's spilled rows (None: the slice has none of this dataset's)."""
    import pyarrow as pa

    if not path.exists():
        return None
    with pa.memory_map(str(path)) as source:
        table = pa.ipc.open_file(source).read_all()
    path.unlink()
    return table


def _read(dataset: ds.Dataset | None, since: datetime, until: datetime) -> pa.Table | None:
    if dataset is None:
        return None
    return dataset.to_table(filter=time_filter(since, until))


def _slice(
    since: datetime, until: datetime, changes: pa.Table | None, peer: pa.Table | None = None
) -> ChangeSlice:
    return ChangeSlice(since, until, _ordered(changes), None if peer is None else _ordered(peer))


def _ordered(table: pa.Table | None) -> pa.Table:
    """The log's columns in time order, each CDC batch's rows together in log order."""
    import pyarrow as pa

    if table is None:
        return pa.table({STREAM_ID: pa.array([], pa.binary())})
    table = table.drop_columns([c for c in NOT_REPLAYED if c in table.column_names])
    order = [(WRITE_TIME, "ascending"), (STREAM_ID, "ascending"), (TIME, "ascending")]
    return table.sort_by([*order, (BATCH_SEQ_NO, "ascending")])


def batch_chunks(table: pa.Table, rows: int) -> Iterator[pa.Table]:
    """Consecutive pieces of ``table`` of about ``rows`` rows that never cut a CDC batch
    (the rows of one stream and ``cdc$time``, adjacent in a slice's order)."""
    import numpy as np

    if table.num_rows == 0:
        return
    streams = table.column(STREAM_ID).to_numpy(zero_copy_only=False)
    times = table.column(TIME).to_numpy(zero_copy_only=False)
    cut = np.flatnonzero((streams[1:] != streams[:-1]) | (times[1:] != times[:-1])) + 1
    begin = 0
    for start in [*(int(i) for i in cut), table.num_rows]:
        if start - begin >= rows or start == table.num_rows:
            yield table.slice(begin, start - begin)
            begin = start
