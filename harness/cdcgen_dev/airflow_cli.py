"""The ``airflow`` command as its own script runs it, leaving without tearing the
interpreter down.

``python -m cdcgen_dev.airflow_cli dags test ...`` calls Airflow's own ``main`` with the
same arguments. When it returns, the exit handlers that Airflow and the libraries
registered run as at any exit (logs flushed, the database pool disposed), then the
process ends at once: freeing the objects of Airflow, Spark's client, GX and the
driver one by one at interpreter shutdown costs seconds on every run and does nothing
another process can see. The exit status is the one the ``airflow`` script gives.
"""

from __future__ import annotations

import atexit
import os
import sys
import threading
from collections.abc import Callable
from typing import NoReturn


def exit_status(code: object) -> int:
    """What the interpreter makes of ``SystemExit(code)``: None is success, an integer
    is itself, anything else (Airflow's "DagRun failed") is printed and means 1."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=sys.stderr)
    return 1


def leave_after(command: Callable[[], object]) -> NoReturn:
    """Run ``command``, then the exit handlers, then end the process with its status."""
    try:
        command()
        status = 0
    except SystemExit as leaving:
        status = exit_status(leaving.code)
    # threading's exit hooks, which an interpreter's exit runs before atexit's: there
    # concurrent.futures shuts its process pools down (the OpenLineage provider's, when a
    # transport is set); without them, multiprocessing's exit handler below waits for a
    # pool worker that is never told to stop, and the process never ends.
    for hook in reversed(list(getattr(threading, "_threading_atexits", []))):
        hook()
    atexit._run_exitfuncs()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(status)


def main() -> NoReturn:
    from airflow.__main__ import main as airflow_main

    sys.argv[0] = "airflow"
    leave_after(airflow_main)


if __name__ == "__main__":
    main()
