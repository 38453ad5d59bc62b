"""Every exception class cdcgen.pipeline raises, in one place: a reader looks here for what can
go wrong in the package and whether another attempt helps (each is terminal or
transient, :mod:`cdcgen.core.errors`; tests/unit/test_error_kinds.py lists them)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from cdcgen.core.errors import TerminalError

if TYPE_CHECKING:
    from cdcgen.pipeline.outcomes import ValidationOutcome


class BackfillNotFollowed(TerminalError):
    """A backfill run of the continuous changes DAG: a follow only reads forward."""


class NoTables(TerminalError):
    """Nothing to extract: no CDC table configured or found; the message says where to look."""


class GenerationRejected(TerminalError):
    """Terminal: validation failed; the generation must not be published."""

    summary = "validation failed"

    def __init__(self, message: str, outcome: ValidationOutcome) -> None:
        super().__init__(message)
        self.outcome = outcome

    def what_next(self) -> str:
        """Consumers take generations in timestamp order, so this one holds back its
        lane; the Param that re-does it alone is named."""
        generation = self.outcome.generation
        lane = f"of {generation.table} " if generation.table else ""
        return (
            f"every newer generation {lane}waits behind it, unpublished. Its report page "
            "lists the failed checks; once their cause is fixed (a new extraction, the "
            "ring recorded for it), trigger the DAG with the Param "
            f"generation_id={generation.iso} to extract, validate and publish it again"
        )


class PublicationRefused(TerminalError):
    """Terminal: the named generation may not go public; the message names it and why.

    Trying again meets the same answer until the source, the target or the input changes.
    """


class RunIncomplete(TerminalError):
    """The run did not do all it had to; the message lists every problem. Terminal for
    the task that says so: it reads what the run's other tasks left, and a retry of it
    alone reads the same."""

    summary = "run incomplete"
    next_step = (
        "each failed task's message ends with what resolves it; the next run takes up "
        "whatever this one left (unpublished generations, checkpoints and consistency "
        "timestamps stand)"
    )
