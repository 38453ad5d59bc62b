"""An environment in which another virtualenv's Python sees only itself.

The provider's own virtualenv (:mod:`cdcgen_dev.provider_venv`) must import the installed
wheel and nothing of the checkout, while a test session's environment holds the checkout
on ``PYTHONPATH``, its virtualenv, and Spark's and Airflow's settings that name this
checkout's files. Those are dropped; the rest (``PATH``, ``HOME``, ``JAVA_HOME``, the
pipeline's ``CDCGEN_*`` settings, a test's markers) passes through.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

#: Variables that could point a Python, Spark or Airflow at the checkout's files.
_DROPPED_PREFIXES = ("PYTHON", "PYSPARK_", "SPARK_", "AIRFLOW")
_DROPPED = frozenset({"VIRTUAL_ENV", "CDCGEN_EXPECTATIONS_DIR"})


def isolated_env(base: Mapping[str, str] | None = None) -> dict[str, str]:
    """``base`` (default: this process's environment) without what would lead another
    virtualenv's Python to this one's files."""
    return {
        name: value
        for name, value in (os.environ if base is None else base).items()
        if name not in _DROPPED and not name.startswith(_DROPPED_PREFIXES)
    }
