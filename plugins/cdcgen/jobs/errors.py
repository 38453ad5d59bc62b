"""Every exception class cdcgen.jobs raises, in one place: a reader looks here for what can
go wrong in the package and whether another attempt helps (each is terminal or
transient, :mod:`cdcgen.core.errors`; tests/unit/test_error_kinds.py lists them)."""

from __future__ import annotations

from cdcgen.core.errors import TerminalError


class ExtractJobError(TerminalError):
    """The job's inputs are unusable (message says which)."""
