"""``python -m cdcgen_dev.demo`` (what ``make demo`` runs)."""

import os
import sys

from cdcgen_dev.demo.cli import main

if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    sys.exit(main())
