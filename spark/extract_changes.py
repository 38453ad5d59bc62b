"""spark-submit entry point: extract one CDC table's closed windows into the lake.

    spark-submit spark/extract_changes.py --table shop.orders \
        --interval-start 2026-11-22T10:00:00Z --interval-end 2026-11-22T11:00:00Z

Thin on purpose: the job lives in :mod:`cdcgen.jobs.extract_changes`, where it is tested.
"""

from __future__ import annotations

import sys

from cdcgen.jobs.extract_changes import main

if __name__ == "__main__":
    sys.exit(main())
