"""Every exception class cdcgen.validation raises, in one place: a reader looks here for what can
go wrong in the package and whether another attempt helps (each is terminal or
transient, :mod:`cdcgen.core.errors`; tests/unit/test_error_kinds.py lists them)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from cdcgen.core.changes_result import ChangesRunResult
from cdcgen.core.errors import TerminalError

if TYPE_CHECKING:
    from cdcgen.validation.results import ValidationResult


class AssetError(TerminalError, RuntimeError):
    """A vendored package could not be fetched, or is not the pinned one."""


class ReportFolderError(TerminalError, ValueError):
    """The folder holds files no validation wrote: it is never deleted."""


class ValidationFailed(TerminalError):
    """Terminal: the data broke at least one rule. The message is the result's summary."""

    def __init__(self, result: ValidationResult) -> None:
        super().__init__(result.summary)
        self.result = result


class ChangesInvalid(ValidationFailed):
    """The rows a changes run wrote broke a rule; the message names the offending rows.

    Terminal for the run (retrying reads the same rows again): the Spark job exits 3.
    """

    def __init__(self, result: ValidationResult) -> None:
        super().__init__(result)
        #: The run's result (rows written, windows, checks) when raised by ``run_changes``.
        self.output: ChangesRunResult | None = None


class SuiteError(TerminalError, ValueError):
    """A suite file that cannot be used (missing, bad JSON, unknown batch or requirement)."""
