"""What one changes run of one table ended with: its outcome, the one model of it.

The run builds it (:meth:`cdcgen.changes.result.ExtractionRun.outcome`), the Spark job
writes it as its result file (success or not), the DAG's summary step reads it back
from another process and derives the table's summary and metrics from it, and the
run's record on the report site is made from it (:mod:`cdcgen.changes.report`). An
attempt that died before its end leaves the few keys its operator wrote. So every key
is optional, and a key never given stays out of the file again (``exclude_unset``): the
file keeps the shape each writer gave it, and the summary reads typed fields with the
defaults the file format always had.

In the core because the row checks' failure (:class:`cdcgen.validation.results.
ChangesInvalid`) carries one, below the changes flow that builds it.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, JsonValue

from cdcgen.core.changes_status import ChangesRunStatus
from cdcgen.core.windows import Mode


class _Json(BaseModel):
    model_config = ConfigDict(frozen=True)


class WindowEntry(_Json):
    """One window written: where it sits in the lake and how many streams it read."""

    generation: str = ""
    bucket: int = 0
    start: str = ""
    end: str = ""
    streams: int = 0
    kind: str = ""


class PendingEntry(_Json):
    """One window not yet closed, and when it will be."""

    generation: str = ""
    end: str = ""
    closes_at: str = ""
    reason: str = ""


class CheckEntry(_Json):
    """One row check over every job of the run, with a few offending rows."""

    check: str = ""
    passed: bool = False
    observed: Any = None
    samples: tuple[dict[str, Any], ...] = ()


class RowChecks(_Json):
    """The row checks' combined verdict on the run."""

    passed: bool = False
    summary: str = ""
    data_docs: str | None = None
    checks: tuple[CheckEntry, ...] = ()
    failed: tuple[str, ...] = ()
    page: str | None = None

    def colocation(self) -> str | None:
        """``passed``/``failed`` for the colocation check, ``None`` if it did not run."""
        for check in self.checks:
            if "colocation" in check.check:
                return "passed" if check.passed else "failed"
        return None


class CycleEntry(_Json):
    """One cycle of a follow (:mod:`cdcgen.core.follow_loop`): every window it wrote ends at
    ``closed_until``, and it was checked and checkpointed at ``finished_at``."""

    number: int = 0
    closed_until: str = ""
    finished_at: str = ""
    rows: int = 0
    watermark: str | None = None
    #: ``done``, or why the cycle's windows were not checkpointed (the follow ended there).
    status: ChangesRunStatus = ChangesRunStatus.DONE


class ChangesRunResult(_Json):
    """A changes run's result (see the module doc); only ``status`` ``done`` is a success."""

    table: str = ""
    interval: tuple[str, str] | None = None
    mode: Mode = Mode.INCREMENTAL
    run_id: str = ""
    lake_root: str = ""
    windows: tuple[WindowEntry, ...] = ()
    pending: tuple[PendingEntry, ...] = ()
    jobs: int = 0
    rows_written: int = 0
    streams_read: int = 0
    rows_per_generation: dict[str, int] = Field(default_factory=dict)
    garbage_removed: int = 0
    lake_format: str = "delta"
    #: The lake table versions the run committed, in order (time travel reads them).
    lake_versions: tuple[int, ...] = ()
    #: Versions whose rows failed the checks and were reverted.
    quarantined_versions: tuple[int, ...] = ()
    watermark: str | None = None
    seconds: float = 0.0
    phases: dict[str, float] = Field(default_factory=dict)
    checks: RowChecks | None = None
    report: str | None = None
    #: A follow's cycles, in order (empty for a run of one cycle).
    cycles: tuple[CycleEntry, ...] = ()
    status: ChangesRunStatus = ChangesRunStatus.DONE
    error: str = ""

    @property
    def failed(self) -> bool:
        return self.status.failed

    @property
    def colocation(self) -> str | None:
        """The colocation check's verdict (see :meth:`RowChecks.colocation`)."""
        return None if self.checks is None else self.checks.colocation()

    @property
    def checks_passed(self) -> bool | None:
        """Whether every row check passed; ``None`` when none ran."""
        return None if self.checks is None else self.checks.passed

    def checked(self, checks: RowChecks | None) -> ChangesRunResult:
        """The run's result once its rows were checked (``None``: no check ran): done,
        unless the checks failed."""
        if checks is None:
            return self.updated(status=ChangesRunStatus.DONE)
        passed = ChangesRunStatus.DONE if checks.passed else ChangesRunStatus.ROW_CHECKS_FAILED
        return self.updated(checks=checks, status=passed)

    def ended(self, status: ChangesRunStatus, error: str) -> ChangesRunResult:
        """What the run had done when it ended on ``error`` (an exception's text)."""
        return self.updated(status=status, error=error)

    def updated(self, **changes: Any) -> ChangesRunResult:
        """A copy with ``changes`` (their keys then written too)."""
        return self.model_copy(update=changes)

    def to_json(self) -> dict[str, object]:
        """The keys given, as the result file holds them (rows in samples as read: the
        file is written with ``default=str``)."""
        return self.model_dump(mode="python", exclude_unset=True)

    @classmethod
    def from_json(cls, data: JsonValue) -> ChangesRunResult:
        """The model of a result file's JSON; pydantic's ValidationError (a ValueError)
        if it is not one."""
        return cls.model_validate(data)
