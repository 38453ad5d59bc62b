"""The deployment's executor: Airflow's LocalExecutor, its workers forked preloaded.

Airflow 3's LocalExecutor forks its workers from the scheduler when it starts, and
each worker forks the process a task runs in (a bare ``os.fork`` on Linux). Whatever
the scheduler has imported by then is in every task's memory, shared copy-on-write,
without being imported again. :func:`cdcgen.airflow.preload.preload` imports what the
generation tasks need once, when the scheduler starts, instead of in every task.

Configure it with ``AIRFLOW__CORE__EXECUTOR=cdcgen.airflow.executor.PreloadingLocalExecutor``
(docker-compose.yaml and the development stack do). Nothing else differs from the
LocalExecutor: a worker that dies is forked again from the same preloaded scheduler.
"""

from __future__ import annotations

import logging

from airflow.executors.local_executor import LocalExecutor

from cdcgen.airflow.preload import preload

log = logging.getLogger(__name__)


class PreloadingLocalExecutor(LocalExecutor):
    """A LocalExecutor that imports the generation tasks' modules before its workers fork."""

    def start(self) -> None:
        if self.is_mp_using_fork:
            seconds = preload()
            log.info("Imported the generation tasks' modules in %.1f s before forking", seconds)
        else:  # [core] mp_start_method = spawn: workers start a fresh interpreter
            log.warning("Workers are spawned, not forked: tasks import their modules themselves")
        super().start()
