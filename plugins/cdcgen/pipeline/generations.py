"""How the generations DAG starts its Spark job: the entry point and its environment.

(The steps of a generations run are :mod:`.detect`, :mod:`.validate`, :mod:`.publish` and
:mod:`.run_summary`; the extract job itself is :mod:`cdcgen.extract.job`.)
"""

from __future__ import annotations

import sys

from cdcgen.config import REPO_ROOT

#: The spark-submit entry point of the extract step.
EXTRACT_APPLICATION = REPO_ROOT / "spark" / "extract_generation.py"

#: Spark settings for a small machine: two local cores, few shuffle partitions, no UI.
SPARK_CONF: dict[str, str] = {
    "spark.sql.shuffle.partitions": "2",
    "spark.default.parallelism": "2",
    "spark.ui.enabled": "false",
    "spark.sql.session.timeZone": "UTC",
    "spark.driver.memory": "1g",
}


def spark_env() -> dict[str, str]:
    """Environment for spark-submit: Spark's Python must be the one that has cdcgen."""
    return {"PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable}
