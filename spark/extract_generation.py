"""spark-submit entry point: extract one CDC generation into the lake.

    spark-submit --master local[2] spark/extract_generation.py \
        --description description.json --generation-ts 2026-11-22T00:00:00Z \
        --generation-id <id> --lake lake/

or, reading the description from the source cluster (what the DAG does):

    ... --contact-points 127.0.0.1 --source-mode raft --generation-ts-ms <ms> ...

Thin on purpose: the job lives in :mod:`cdcgen.extract.job`, where it is tested.
"""

from __future__ import annotations

import sys

from cdcgen.extract.job import main

if __name__ == "__main__":
    sys.exit(main())
