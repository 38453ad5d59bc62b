"""Every exception class cdcgen.reports raises, in one place: a reader looks here for what can
go wrong in the package and whether another attempt helps (each is terminal or
transient, :mod:`cdcgen.core.errors`; tests/unit/test_error_kinds.py lists them)."""

from __future__ import annotations

from cdcgen.core.errors import TerminalError


class RecordError(TerminalError, ValueError):
    """A run record that cannot be read (bad JSON, missing field, newer schema)."""


class NotARecord(RecordError):
    """JSON that is not a run record at all (no ``kind``): skipped, not reported."""
