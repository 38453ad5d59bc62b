"""Where the checkout is: the development harness's folders (``var/``, ``dags/``, the lake
and reports of ``make demo`` and a developer's Airflow home) hang off it.

The product never derives a path from where it is installed; the harness, installed
editable from ``harness/``, is always in a checkout.
"""

from __future__ import annotations

from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
#: The checkout's own lake and report folder: what a developer's Airflow home and the
#: full stack use (the product's defaults are in the user's data folder).
CHECKOUT_LAKE = REPO_ROOT / "lake"
CHECKOUT_REPORTS = REPO_ROOT / "reports"
