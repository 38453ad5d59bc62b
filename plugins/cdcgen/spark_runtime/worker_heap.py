"""The Python worker's heap: its long-lived objects moved out of the garbage collector's way.

A read task allocates and drops millions of small objects (the driver's rows, their
UUIDs and byte strings), so CPython's collector runs often, and each of its full
collections walks every object alive in the process: PySpark, pyarrow, numpy, the
cassandra-driver and the worker's shared session, none of which ever becomes garbage.
With the heap frozen, a range task's extraction over a table of
``benchmarks/bench_changes.py`` runs measurably faster, in one process and in Spark.
Workers are reused across jobs, so a raw scan run in the same session gains as well.

:func:`freeze_once` freezes (``gc.freeze``) what the worker holds when its first task
has set up: imports, the shared session, the task's builder. It runs once per worker
process (workers are reused across tasks), after a full collection, so no garbage is
frozen with it; what later tasks allocate is collected as usual.
"""

from __future__ import annotations

import gc

_frozen = False


def freeze_once() -> bool:
    """Freeze this process's current heap the first time; True if this call froze it."""
    global _frozen
    if _frozen:
        return False
    gc.collect()
    gc.freeze()
    _frozen = True
    return True
