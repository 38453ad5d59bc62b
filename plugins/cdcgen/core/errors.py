"""The package's one error model: every error it raises says whether another attempt helps.

Split as dlt splits its errors into terminal and transient ones. A *terminal* error meets
the same answer however often it is tried (a refused login, a setting the pipeline
cannot use, corrupt metadata, data that broke a rule, changes the log no longer holds):
its task fails at once, naming the cause, instead of repeating it for every retry. A
*transient* one may not happen again (no node answered, a copy stopped part-way, a
generation still being written): its task is retried. Every class the package raises
derives from exactly one of the two; a few bases (:class:`CdcgenError` itself,
``MetadataError``, ``PublishError``...) only group them and are never raised.

Whether a task retries is decided from the error alone, in one place
(:func:`cdcgen.adapters.errors.is_terminal`), never by the code that raised it; the
jobs and the command line say the same with their exit status (:class:`ExitCode`).
"""

from __future__ import annotations

from enum import IntEnum
from typing import ClassVar


class CdcgenError(Exception):
    """Root of every error the package raises."""


class TerminalError(CdcgenError):
    """Another attempt meets the same answer: the task fails at once."""

    #: What went wrong, as the task's failure message opens ("cluster refused access");
    #: the class's name when empty.
    summary: ClassVar[str] = ""

    #: What to do next, as the task's failure message ends: what stays held back, and
    #: which command, Param or setting lets it through; empty when the message itself
    #: says it (the raiser knew the table and the command).
    next_step: ClassVar[str] = ""

    @classmethod
    def headline(cls) -> str:
        return cls.summary or cls.__name__

    def what_next(self) -> str:
        """This error's next step: :attr:`next_step`, unless the class knows a closer one
        from what it carries (a rejected generation names itself and its Param)."""
        return self.next_step


class TransientError(CdcgenError):
    """A later attempt may not meet it: the task is retried."""


class ExitCode(IntEnum):
    """The exit status of every job (``spark/*.py``, ``python -m cdcgen...``) and of the
    command line: one meaning per number, so that a caller (the Spark submit operator, a
    script) decides on the number alone."""

    #: Done.
    OK = 0
    #: The command ran and what it checked failed: a generation that does not pass
    #: validation, changes the sink rejected. (Also Python's own status for an
    #: unhandled exception, a bug, which is then printed with its traceback.)
    FINDINGS = 1
    #: A flag or argument the command cannot take (argparse's own status).
    USAGE = 2
    #: A terminal error: no attempt can succeed until something is changed.
    TERMINAL = 3
    #: A transient error: a later attempt may succeed (a retry resumes where this stopped).
    TRANSIENT = 4
