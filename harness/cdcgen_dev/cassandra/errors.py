"""The one exception type the sandbox raises for problems a user can fix."""

from __future__ import annotations


class SandboxError(Exception):
    """A user-fixable sandbox problem (Java missing, port taken, node did not start).

    ``str(exc)`` is a one-line summary suitable for a CLI error line; ``details``
    holds multi-line context (typically the tail of the node's log) that callers
    print separately, so the summary stays readable.
    """

    def __init__(self, message: str, details: str = "") -> None:
        super().__init__(message)
        self.details = details
