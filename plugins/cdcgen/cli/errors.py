"""Every exception class cdcgen.cli raises, in one place: a reader looks here for what can
go wrong in the package and whether another attempt helps (each is terminal or
transient, :mod:`cdcgen.core.errors`; tests/unit/test_error_kinds.py lists them)."""

from __future__ import annotations

from cdcgen.core.errors import TerminalError


class CliError(TerminalError):
    """A user-facing error: printed to stderr as one line. Its exit status is its cause's
    kind (:func:`cdcgen.cli.exit_status`): a value the command was given is a usage error."""
