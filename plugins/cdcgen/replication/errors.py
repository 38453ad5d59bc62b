"""Every exception class cdcgen.replication raises, in one place: a reader looks here for what can
go wrong in the package and whether another attempt helps (each is terminal or
transient, :mod:`cdcgen.core.errors`; tests/unit/test_error_kinds.py lists them)."""

from __future__ import annotations

from cdcgen.core.errors import TerminalError


class ChangesRejected(TerminalError):
    """The sink refused some of the run's changes; each is recorded with its reason in
    the sink keyspace's ``cdc_replication_rejects``. Terminal: a retry would not apply
    them either; the message names the first few."""

    summary = "changes not applied"
    next_step = (
        "the sink table's consistency timestamp has moved past them, each kept with its "
        "reason in the sink keyspace's cdc_replication_rejects and on the report's "
        "replication page: fix what refused them on the sink, then re-copy the table with "
        "a replication DAG run with the Param mode=bootstrap-replace (dry_run first shows "
        "what it truncates)"
    )


class SinkSchemaError(TerminalError):
    """Terminal: the sink table cannot receive the source table's changes."""

    next_step = (
        "no change reaches this sink table until it can take them: create or alter it "
        "to the source table's definition (docs/replication.md), then clear the task"
    )
