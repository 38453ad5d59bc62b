"""The errors of the package's top-level modules (the settings: :mod:`cdcgen.config`,
:mod:`cdcgen.env_settings`...); each package below has an ``errors`` module of its own
(each error terminal or transient, :mod:`cdcgen.core.errors`; tests/unit/test_error_kinds.py
lists them all)."""

from __future__ import annotations

from cdcgen.core.errors import TerminalError


class ConfigError(TerminalError, ValueError):
    """A setting has a value the pipeline cannot use; the message names the setting."""

    summary = "configuration refused"
    next_step = (
        "correct what the message names (the connection's field or extra, the CDCGEN_* "
        "variable or the run's Param; docs/configuration.md), then clear the task"
    )
