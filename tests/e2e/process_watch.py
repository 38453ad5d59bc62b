"""A secret looked for in the command lines and environments of the processes a test
starts, sampled while they run (``/proc`` through psutil): what a run leaves in files is
checked after it, what its processes carry can only be seen while they live."""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass, field
from types import TracebackType

import psutil

#: A Spark application's processes: spark-submit's JVM and all it starts (the Python
#: driver, the Python workers and, on a local master, the executors).
SPARK_SUBMIT = "org.apache.spark.deploy.SparkSubmit"


@dataclass
class ProcessWatch:
    """Every process descending from this one, sampled every ``interval`` seconds.

    ``leaks`` names each process whose command line holds ``secret`` and each Spark
    process whose environment does; ``spark`` is every Spark process seen (pid to
    command line), so a test can check that the watch saw what it was meant to."""

    secret: bytes = field(repr=False)
    interval: float = 0.2
    leaks: set[str] = field(default_factory=set)
    spark: dict[int, str] = field(default_factory=dict)
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def __enter__(self) -> ProcessWatch:
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()

    def _run(self) -> None:
        me = psutil.Process(os.getpid())
        while not self._stop.wait(self.interval):
            for process in me.children(recursive=True):
                try:
                    self._sample(process)
                except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
                    continue

    def _sample(self, process: psutil.Process) -> None:
        argv = " ".join(process.cmdline())
        if self.secret in argv.encode():
            self.leaks.add(f"argv of {process.pid}: {argv[:200]}")
        lineage = [process, *process.parents()]
        if not any(SPARK_SUBMIT in " ".join(p.cmdline()) for p in lineage):
            return
        self.spark[process.pid] = argv
        holding = [k for k, v in process.environ().items() if self.secret in f"{k}={v}".encode()]
        if holding:
            self.leaks.add(f"environment of {process.pid} ({argv[:120]}): {holding}")
