"""Every exception class cdcgen.changes raises, in one place: a reader looks here for what can
go wrong in the package and whether another attempt helps (each is terminal or
transient, :mod:`cdcgen.core.errors`; tests/unit/test_error_kinds.py lists them)."""

from __future__ import annotations

from cdcgen.core.errors import TerminalError, TransientError


class LayoutError(TerminalError):
    """Terminal: the lake directory does not look like this project wrote it."""


class NothingClosed(TransientError):
    """A follow closed no window for the clock wait timeout: a node's clock cannot be
    read, or stands still. Transient, as the scheduled mode's wait that times out: the
    node may come back."""


class OverlappingReads(TerminalError, ValueError):
    """A stream has two reads whose times overlap: a row could not go to one only."""
