"""Many idempotent writes at once, retrying the ones a busy cluster times out.

Publication writes megabyte batches of description rows; the same rows go out on every
attempt, so a retry is always safe. A busy node times out under many concurrent batches:
each retry round halves the concurrency and backs off. Anything but a transient error
(:func:`cdcgen.adapters.errors.is_transient`) fails at once.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from cdcgen.adapters.errors import is_transient, unavailable
from cdcgen.progress import Progress

if TYPE_CHECKING:
    from cdcgen.adapters.cql import CqlClient

log = logging.getLogger(__name__)

#: Statements per progress step (a publication batch is up to ~1 MB of ranges).
PROGRESS_SLICE = 32

DEFAULT_BATCH_BYTES = 256_000
"""About 200 ranges of 64 streams per batch. On the sandbox with the seed's
1.6-million-stream generation (25,600 rows), 1 MB batches with 20 in flight overload the
connection (the driver reports it busy, rounds of retries follow); 256 kB with 8 in
flight writes the rows far quicker than single-row inserts."""

_ROW_OVERHEAD = 64  # key, clustering and set framing of one row, roughly


class IdempotentWriter:
    """Runs idempotent statements ``concurrency`` at a time, retrying transient failures."""

    def __init__(
        self, client: CqlClient, concurrency: int, retries: int = 5, retry_backoff: float = 0.5
    ) -> None:
        self.client = client
        self.concurrency = concurrency
        self.retries = retries
        self.retry_backoff = retry_backoff

    def execute(self, statements: Sequence[Any], unit: str, label: str) -> None:
        """Run every statement, in slices so the log says how far a large write has got.

        ``unit`` names what a statement's ``len`` counts (ranges, rows) in the progress lines.
        """
        sizes = [len(batch) for batch in statements]
        progress = Progress(total=sum(sizes), unit=unit, log=log.info, label=label)
        for start in range(0, len(statements), PROGRESS_SLICE):
            self._execute_all(statements[start : start + PROGRESS_SLICE])
            progress.advance(sum(sizes[start : start + PROGRESS_SLICE]))
        if len(statements) > PROGRESS_SLICE:
            progress.finish()

    def execute_one(self, statement: Any, params: Sequence[Any] = ()) -> Any:
        """One idempotent statement (a read, or a write of fixed values), retried like the
        batches: a node that just died may still time a request out before it is known
        down; once retries are spent an ``Unavailable`` names the nodes down."""
        return self.client.execute_retried(
            statement, tuple(params), retries=self.retries, backoff=self.retry_backoff
        )

    def _execute_all(self, statements: Sequence[Any]) -> None:
        """Run statements ``concurrency`` at a time, retrying the ones that timed out.

        Every statement writes the same rows on every attempt, so a retry is safe. A busy
        node times out under 20 concurrent megabyte batches; each retry round halves the
        concurrency and backs off. Anything but a transient error fails at once.
        """
        from cassandra.concurrent import execute_concurrent

        pending = list(statements)
        concurrency = self.concurrency
        for attempt in range(self.retries + 1):
            results = execute_concurrent(
                self.client.session,
                [(statement, ()) for statement in pending],
                concurrency=concurrency,
                raise_on_first_error=False,
                results_generator=False,
            )
            failed = [
                (statement, outcome)
                for statement, (ok, outcome) in zip(pending, results, strict=True)
                if not ok
            ]
            if not failed:
                return
            for _, error in failed:
                if not is_transient(error):
                    raise error
            if attempt == self.retries:
                error = failed[0][1]
                named = unavailable(error, self.client.hosts_down())
                if named is not None:
                    raise named from error
                raise error
            concurrency = max(1, concurrency // 2)
            log.warning(
                "%d of %d writes timed out (%s); retrying with %d in flight",
                len(failed),
                len(pending),
                failed[0][1],
                concurrency,
            )
            time.sleep(self.retry_backoff * 2**attempt)
            pending = [statement for statement, _ in failed]


def batches_by_size(
    rows: Iterable[tuple[int, Sequence[bytes]]], max_bytes: int = DEFAULT_BATCH_BYTES
) -> list[list[tuple[int, Sequence[bytes]]]]:
    """Group ``(range_end, streams)`` rows into batches of about ``max_bytes`` each.

    A row larger than ``max_bytes`` (an entry with tens of thousands of shards) goes
    alone: rows are never split, a description row is written whole or not at all.
    """
    batches: list[list[tuple[int, Sequence[bytes]]]] = []
    current: list[tuple[int, Sequence[bytes]]] = []
    size = 0
    for row in rows:
        row_size = _ROW_OVERHEAD + sum(map(len, row[1])) + 4 * len(row[1])  # map: in C
        if current and size + row_size > max_bytes:
            batches.append(current)
            current, size = [], 0
        current.append(row)
        size += row_size
    if current:
        batches.append(current)
    return batches
