"""spark-submit entry point: bootstrap one sink table from a copy of the source table.

    spark-submit spark/replication_bootstrap.py --table shop.orders \
        --sink-table shop_dr.orders [--replace] [--run-id ID] [--output FILE]

Thin on purpose: the job lives in :mod:`cdcgen.jobs.replication_bootstrap`, where it is
tested.
"""

from __future__ import annotations

import sys

from cdcgen.jobs.replication_bootstrap import main

if __name__ == "__main__":
    sys.exit(main())
