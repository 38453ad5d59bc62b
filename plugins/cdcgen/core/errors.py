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
from typing import Any, ClassVar


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


class BadCdcExtension(TerminalError, ValueError):
    """The bytes are not a serialized ``map<sstring, sstring>``."""


class LogTableError(TerminalError):
    """Terminal: the table is not CDC-enabled, or its log does not have ScyllaDB's shape."""


class CqlTypeError(TerminalError, ValueError):
    """Terminal: text that is not a CQL type; the message quotes it."""


class MetadataError(CdcgenError):
    """Base class: the source's generation metadata cannot be used as it is."""


class IncompleteGeneration(TransientError, MetadataError):
    """Transient: a generation is being written (e.g. rows < num_ranges); read again later."""


class GenerationChanged(TerminalError, MetadataError):
    """The source's stream set of a generation is no longer the one validated: the
    generation must be extracted and validated again, which a retry of the task that
    met it does not do."""


class CorruptGeneration(TerminalError, MetadataError):
    """Terminal: the metadata is wrong (bad stream IDs, unknown version, ...).

    ``stored_rows``: the ``(range_end, streams, ignore_msb)`` rows as read, when the
    reader got that far; the extract step then still puts them in the lake, so the
    validation can name what is wrong in its report instead of the run only failing.
    """

    def __init__(self, message: str, stored_rows: list[tuple[Any, Any, Any]] | None = None):
        super().__init__(message)
        self.stored_rows = stored_rows


class InvalidName(TerminalError, ValueError):
    """A keyspace, table or column name the pipeline does not place into CQL, or may
    not write to; the message quotes it."""


class LakeUriError(TerminalError, ValueError):
    """A lake location that cannot be used (a scheme not supported, no bucket)."""


class StateMissing(TerminalError):
    """Terminal: the keyspace or table the state is read from does not exist (no run has
    saved state there, or a setting names the wrong keyspace): the message names which."""

    summary = "no pipeline state"


class ReplicationError(TerminalError):
    """Terminal: the sink cannot be brought forward as it stands; the message says why
    and what to run."""

    next_step = (
        "until then no change reaches this sink table. In Airflow, a replication DAG run "
        "with the Param mode=bootstrap does what the command without --replace does, "
        "mode=bootstrap-replace what it does with --replace (dry_run first shows what it "
        "would truncate)"
    )


class LakeNotStarted(ReplicationError):
    """The lake has no watermark of the source table yet: a run has nothing to apply
    (terminal: its retries would find the same), a follow waits for the first one."""

    next_step = (
        "until then no change reaches this sink table. Run the cdc_changes DAG for the "
        "table (or let its follow finish its first cycle); replication applies from its "
        "first watermark on"
    )


class CopyIncomplete(TransientError):
    """Transient: a bootstrap's copy stopped part-way (a node, an executor, a timeout).
    The ranges it recorded stay done; the next bootstrap resumes with the others."""


class ApplyIncomplete(TransientError):
    """Transient: a run's apply on Spark stopped part-way (an executor, a node, a
    timeout). The consistency point stays before the slice; the next run applies it
    again, which writes the same cells at the same times."""


class SnapshotClockUnreadable(TransientError):
    """Transient: a source node's clock could not be read, so no snapshot time is safe
    (that node may be behind and still accept writes stamped before it)."""


class InvalidStreamId(TerminalError, ValueError):
    """Bytes or text that cannot be a CDC stream ID."""


class InvalidStreamHistory(TerminalError, ValueError):
    """State and history rows that do not describe a consistent sequence of stream sets."""


class InvalidTimestamp(TerminalError, ValueError):
    """A naive datetime, or a generation timestamp finer than the millisecond."""


class UnknownGeneration(TerminalError, LookupError):
    """A generation timestamp the timeline has never heard of."""


class ConflictingGeneration(TerminalError, ValueError):
    """Two different descriptions offered for the same generation timestamp."""


class GenerationTimestampNotIncreasing(TerminalError, ValueError):
    """A new generation timestamp that does not come after the last committed one."""


class WriteRejected(TerminalError):
    """Base class: the timeline cannot give a stream for this write."""


class WriteFromTheFuture(WriteRejected):
    """``W > C + L``; ScyllaDB answers the client with an invalid-request error."""


class WriteFromThePast(WriteRejected):
    """``W <= C - L`` outside the current generation; an invalid-request error too."""


class NoGenerationForWrite(WriteRejected):
    """``W`` precedes every known generation (ScyllaDB: runtime error, "no stream")."""


class GenerationNotLoaded(WriteRejected):
    """The generation operating at ``W`` is known but its description is not loaded."""


class InvalidToken(TerminalError, ValueError):
    """A value that is not a signed 64-bit token."""


class InvalidSharding(TerminalError, ValueError):
    """A shard count, shard number or ignore_msb value no ScyllaDB node could have."""


class InvalidTopology(TerminalError, ValueError):
    """Nodes and tokens from which no generation can be built."""


class InvalidDescription(TerminalError, ValueError):
    """A topology description that breaks the rules ScyllaDB's lookup depends on."""


class StreamOrderError(InvalidDescription):
    """A stream set whose IDs do not fit the range and shard count they were stored with."""


class UnreadableJson(TerminalError, ValueError):
    """A file that is not JSON a description or topology could be, said in one line."""


class DataExpired(TerminalError):
    """Terminal: a window starts before ``now - CDC TTL``; its rows are gone from the log.

    Retrying cannot help. The message says what to do: re-bootstrap the table.
    """


class LakeInconsistent(TerminalError):
    """Terminal: the lake holds a window that the checkpoints cannot explain."""
