"""Every exception class cdcgen.airflow raises, in one place: a reader looks here for what can
go wrong in the package and whether another attempt helps (each is terminal or
transient, :mod:`cdcgen.core.errors`; tests/unit/test_error_kinds.py lists them)."""

from __future__ import annotations

from typing import ClassVar

from cdcgen.core.errors import TerminalError
from cdcgen.errors import ConfigError


class LagAboveThreshold(TerminalError):
    """A table lags more than the alert threshold; the message names each one."""

    summary = "lag above the alert threshold"
    #: The setting a lag is held against (its name, for the messages).
    setting: ClassVar[str] = "CDCGEN_ALERT_LAG_SECONDS"
    next_step = (
        "find what holds the table back (its extract or apply tasks in the last runs, the "
        f"cluster's health); a lag that is expected calls for a larger {setting}"
    )


class PreloadError(TerminalError, RuntimeError):
    """An import started a thread: forking the process would copy it half-done."""


class ClocksNotPast(TerminalError):
    """The wait ended before every node's clock was past its target: a node down,
    unreachable or with its clock behind, named in the message."""

    summary = "node clocks not past the target"
    next_step = (
        "bring back or fix the nodes named above, then clear the task: nothing after "
        "the wait ran, so nothing is half done"
    )


class JobFileMissing(TerminalError):
    """The package lacks a job's source file (an install without sources): spark-submit
    takes a Python application only as a ``.py`` file."""


class SparkMasterRefused(ConfigError):
    """Terminal: the Spark connection would run the driver where the job's settings and
    credentials cannot reach it without a command line; the message says what to set."""

    summary = "spark-submit refused"


class JobRefused(TerminalError):
    """The Spark job ended on a terminal error (its exit status says so); its output, in
    the task's log, names it. Not retried: the job would meet it again."""

    summary = "the Spark job refused"
    next_step = (
        "fix what the job's error names (its output is in this task's log), then clear "
        "the task; a later run of the DAG meets the same error until then"
    )
