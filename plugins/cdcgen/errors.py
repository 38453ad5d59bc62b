"""Every exception class cdcgen raises, in one place: a reader looks here for what can
go wrong in the package and whether another attempt helps (each is terminal or
transient, :mod:`cdcgen.core.errors`; tests/unit/test_error_kinds.py lists them)."""

from __future__ import annotations

from cdcgen.core.errors import TerminalError


class ConfigError(TerminalError, ValueError):
    """A setting has a value the pipeline cannot use; the message names the setting."""

    summary = "configuration refused"
    next_step = (
        "correct what the message names (the connection's field or extra, the CDCGEN_* "
        "variable or the run's Param; docs/configuration.md), then clear the task"
    )
