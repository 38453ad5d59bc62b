"""The read tasks' worker heap is frozen once per process, after a full collection."""

from __future__ import annotations

import subprocess
import sys

PROBE = """
import gc
from cdcgen.spark_runtime.worker_heap import freeze_once
import weakref
class Node:
    pass
garbage = Node()
garbage.me = garbage  # a cycle only a collection frees
alive = weakref.ref(garbage)
del garbage
assert gc.get_freeze_count() == 0
assert freeze_once() is True
frozen = gc.get_freeze_count()
assert frozen > 1000, frozen  # the imports' objects, not an empty freeze
assert alive() is None  # collected first, not frozen for good
assert freeze_once() is False and gc.get_freeze_count() == frozen
print("ok")
"""


def test_the_heap_is_frozen_once_per_worker_process_without_its_garbage() -> None:
    # A fresh interpreter, as a Spark Python worker is: freezing pytest's own heap
    # would keep every later test's garbage.
    done = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"
