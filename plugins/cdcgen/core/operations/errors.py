"""The errors of the CQL rules."""

from __future__ import annotations

from cdcgen.core.errors import TerminalError


class ReplayError(TerminalError, ValueError):
    """A change that cannot be replayed as logged; the message names it."""
