"""The libraries and task modules every generation task imports, imported ahead of it.

Each Airflow task runs in a process of its own, and a generation's tasks import the
same heavy libraries every time: Great Expectations with this project's expectations
(seconds of pure Python, see :mod:`cdcgen.validation.gx_runner`), the Spark Connect
client, pandas and the pipeline's own modules. A process
that imports them once and then forks the tasks (:mod:`cdcgen.airflow.executor`) gives
every task that time back. ``benchmarks/bench_generation_pipeline.py`` calls
:func:`preload` before its stages for the same reason, so what it measures is what a
task of the deployment pays.

No import here may start a thread or open a connection: the caller forks.
"""

from __future__ import annotations

import importlib
import threading
import time

from cdcgen.airflow.errors import PreloadError

#: Imported by name, so this module sits above none of them in the layers.
TASK_MODULES: tuple[str, ...] = (
    "pandas",
    "pyarrow",
    "cassandra.cluster",
    "pyspark.sql",
    "pyspark.sql.connect.session",  # the extract and validate tasks' Connect client
    "cdcgen.airflow.generation_steps",
    "cdcgen.airflow.spark_submit",
    "cdcgen.adapters.generation_sources",
    "cdcgen.jobs.extract_generation",
    "cdcgen.pipeline.detect",
    "cdcgen.pipeline.validate",
    "cdcgen.pipeline.publish",
    "cdcgen.pipeline.reporting",
)


def preload() -> float:
    """Import :data:`TASK_MODULES` and Great Expectations; return the seconds it took."""
    started, running = time.perf_counter(), set(threading.enumerate())
    for name in TASK_MODULES:
        importlib.import_module(name)
    from cdcgen.validation.gx_runner import import_gx

    import_gx()
    # The caller's own threads are its business; one an import started is this module's.
    threads = [t.name for t in threading.enumerate() if t not in running]
    if threads:
        raise PreloadError(f"threads running after the preload, unsafe to fork: {threads}")
    return time.perf_counter() - started
