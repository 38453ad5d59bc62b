"""How a changes run ended: the ``status`` of its result (:mod:`.changes_result`).

Its own module, without pydantic, because the Spark operator writes the status of an
attempt that has not ended yet when a DAG file is parsed
(:func:`cdcgen.pipeline.result_files.open_attempt`).
"""

from __future__ import annotations

from enum import StrEnum


class ChangesRunStatus(StrEnum):
    """A run's status, as its result file holds it (the values are those strings).

    Only ``done`` is a success, so a reader asks :attr:`done` or :attr:`failed` and never
    compares strings. A status this version does not know (a file written by another
    one) is read as written, so that the summary still says what the file said, and
    counts as a failure: a run is judged a success only when it said so in words this
    version understands.
    """

    DONE = "done"
    #: Rows failed the row checks: quarantined, and not checkpointed.
    ROW_CHECKS_FAILED = "row checks failed"
    #: A follow's result between its cycles: a follow killed part-way fails its run.
    FOLLOWING = "following (stopped before the end of its follow)"
    DATA_EXPIRED = "data expired: re-bootstrap needed"
    TRANSIENT_READ_ERROR = "transient read error"
    TRANSIENT_ERROR = "transient error"
    #: A terminal error other than the two above (a refused login, a bad setting).
    REFUSED = "refused"
    #: An attempt that died before writing its result, or a result file unreadable as one.
    FAILED = "failed"
    #: No result file at all: the table's wait or its Spark job failed before writing one.
    NOT_EXTRACTED = "not extracted"

    @classmethod
    def _missing_(cls, value: object) -> ChangesRunStatus | None:
        """An unknown string becomes a status of its own, outside the members above."""
        if not isinstance(value, str):
            return None
        unknown = str.__new__(cls, value)
        unknown._name_ = "UNKNOWN"
        unknown._value_ = value
        return unknown

    @property
    def done(self) -> bool:
        return self is ChangesRunStatus.DONE

    @property
    def failed(self) -> bool:
        return not self.done
