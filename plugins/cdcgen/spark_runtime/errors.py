"""Every exception class cdcgen.spark_runtime raises, in one place: a reader looks here for what can
go wrong in the package and whether another attempt helps (each is terminal or
transient, :mod:`cdcgen.core.errors`; tests/unit/test_error_kinds.py lists them)."""

from __future__ import annotations

from cdcgen.adapters.errors import AccessRefused
from cdcgen.core.errors import TerminalError


class ArchiveError(TerminalError):
    """The archive could not be written or the JVM would not map it."""


class JarError(TerminalError):
    """A jar that could not be fetched, or whose content is not the pinned one."""


class SparkServerMismatch(TerminalError):
    """The Spark Connect server lacks a setting the job needs (the message says which)."""


class SparkServerRefused(AccessRefused):
    """Terminal: the Spark Connect server refused this client's token (or its lack of
    one); another attempt with the same settings meets the same answer, so the Airflow
    edge fails the task at once (:func:`cdcgen.airflow.failures.fail_fast`)."""

    summary = "the Spark Connect server refused access"
