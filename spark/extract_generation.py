"""spark-submit entry point: extract one CDC generation into the lake.

    spark-submit --master local[2] spark/extract_generation.py \
        --generation-ts-ms <ms> --generation-id <id>

reads the description from the source cluster the ``CDCGEN_*`` environment names (what
the DAG does); ``--description FILE`` extracts a description JSON instead.

Thin on purpose: the job lives in :mod:`cdcgen.jobs.extract_generation`, where it is tested.
"""

from __future__ import annotations

import sys

from cdcgen.jobs.extract_generation import main

if __name__ == "__main__":
    sys.exit(main())
