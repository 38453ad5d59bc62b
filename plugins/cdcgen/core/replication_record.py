"""What one replication run or bootstrap of one sink table reports: its record, as a model.

The run builds it (:mod:`cdcgen.replication.replication_run`), the report site keeps it under
``replication/<sink table>/`` and reads it back for its page, the DAG's apply task
returns it to XCom, the CLI prints it and the bootstrap job writes it to its result
file. Each of these is the JSON of :meth:`ReplicationRecord.to_json`, whose keys are
only those the writer gave (``exclude_unset``), in the order the run adds them: an
apply, a bootstrap, a dry run and a refused job each write a different subset, and
records older runs left must still read. So every key but the tables' names is
optional, with the default a reader of an older record always assumed. Times stay the
ISO text the run wrote (the page parses them, naming a record it cannot read).

In the core because the report site, below the replication flow that builds it, reads
it too.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field


class ReplicationRunStatus(StrEnum):
    """How a run ended, as its record says."""

    #: Every change applied.
    OK = "ok"
    #: Some were not (named in ``rejected``).
    REJECTED = "rejected"
    #: Nothing written.
    DRY_RUN = "dry-run"
    #: The bootstrap job failed for good (its result file only).
    REFUSED = "refused"
    #: The bootstrap job failed part-way (its result file only).
    INCOMPLETE = "incomplete"
    #: No record at all: the table's bootstrap or apply task failed before writing one
    #: (the run's summary only).
    NOT_REPLICATED = "not replicated"


class _Json(BaseModel):
    model_config = ConfigDict(frozen=True)


class RejectedEntry(_Json):
    """A change the sink refused or the replay model could not express."""

    write_time: str
    cdc_time: str
    stream_id: str
    reason: str


class BootstrapDone(_Json):
    """The bootstrap a run made before it applied."""

    bootstrapped_at: str | None = None
    copied_rows: int | None = None


class ApplyCycle(_Json):
    """One cycle of a follow (:mod:`cdcgen.core.follow_loop`): the sink held every change up
    to ``consistent_until`` at ``finished_at``."""

    number: int = 0
    consistent_until: str | None = None
    finished_at: str = ""
    applied_log_rows: int = 0


class ReplicationRecord(_Json):
    """One run's record (see the module doc); the fields in the order the run writes them."""

    kind: Literal["apply", "bootstrap"] = "apply"
    source_table: str
    sink_table: str
    run_id: str = ""
    started_at: str | None = None
    #: The sink's consistency point before the run.
    consistent_from: str | None = None
    # A dry run: what it would do.
    dry_run: bool = False
    would_apply_from: str | None = None
    would_apply_until: str | None = None
    snapshot_at: str | None = None
    would_truncate: str | None = None
    resumes_copy: bool = False
    sink_cluster: str | None = None
    # An apply.
    bootstrap: BootstrapDone | None = None
    applied_from: str | None = None
    lake_version: int | None = None
    peer_log_rows_skipped: int = 0
    slices: int = 0
    largest_slice_rows: int = 0
    applied_operations: dict[str, int] = Field(default_factory=dict)
    # A bootstrap.
    copied_rows: int | None = None
    truncated: bool = False
    copied_rows_now: int = 0
    resumed_ranges: int = 0
    copy_ranges: int = 0
    # Every run that ended.
    ended_at: str | None = None
    #: The sink's consistency point after the run.
    consistent_until: str | None = None
    bootstrapped_at: str | None = None
    lag_seconds: float | None = None
    applied_log_rows: int = 0
    applied_batches: int = 0
    #: The first rejected changes (a run keeps a bounded number), and how many in all.
    rejected: tuple[RejectedEntry, ...] = ()
    rejected_count: int = 0
    #: A follow's cycles, in order (empty for a run of one cycle).
    cycles: tuple[ApplyCycle, ...] = ()
    status: ReplicationRunStatus = ReplicationRunStatus.OK
    error: str = ""

    def updated(self, **changes: Any) -> ReplicationRecord:
        """A copy with ``changes``, validated, their keys then written too (a run adds
        to its record as it goes)."""
        return self.from_json({**self.model_dump(exclude_unset=True), **changes})

    def to_json(self) -> dict[str, Any]:
        """The keys given, as JSON values (lists, not tuples: XCom keeps a tuple as an
        object of its own)."""
        return self.model_dump(mode="json", exclude_unset=True)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ReplicationRecord:
        """The model of a record's object; pydantic's ValidationError (a ValueError) if
        it is not one."""
        return cls.model_validate(data)
