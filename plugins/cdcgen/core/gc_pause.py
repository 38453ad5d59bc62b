"""Building millions of objects that form no cycles, without the collector's walks."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def paused_collections() -> Iterator[None]:
    """No garbage collection while millions of objects are built that form no cycles.

    Each collection the new lists and tuples trigger walks every list reachable so far,
    so the 1.6 million blobs of a large generation, or the requests of a replication
    chunk, are visited again and again. Left as found on exit.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
