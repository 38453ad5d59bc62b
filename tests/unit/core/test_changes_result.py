"""A changes run's outcome decides its own status and verdicts
(cdcgen.core.changes_result)."""

from __future__ import annotations

from cdcgen.core.changes_result import ChangesRunResult, CheckEntry, RowChecks
from cdcgen.core.changes_status import ChangesRunStatus

COLOCATION = "change in its key's stream (colocation)"


def row_checks(*, colocation: bool, others: bool = True) -> RowChecks:
    return RowChecks(
        passed=colocation and others,
        checks=(
            CheckEntry(check="no duplicate changes", passed=others),
            CheckEntry(check=COLOCATION, passed=colocation),
        ),
    )


def test_a_run_whose_rows_were_not_checked_is_done_and_says_nothing_of_checks() -> None:
    outcome = ChangesRunResult(table="shop.orders", rows_written=3).checked(None)
    assert outcome.status is ChangesRunStatus.DONE and not outcome.failed
    assert outcome.to_json()["status"] == "done" and "checks" not in outcome.to_json()
    assert (outcome.colocation, outcome.checks_passed) == (None, None)


def test_a_run_is_done_when_its_checks_pass_and_failed_when_one_fails() -> None:
    passed = ChangesRunResult(rows_written=3).checked(row_checks(colocation=True))
    assert passed.status is ChangesRunStatus.DONE and not passed.failed
    assert (passed.colocation, passed.checks_passed) == ("passed", True)
    misrouted = ChangesRunResult(rows_written=3).checked(row_checks(colocation=False))
    assert misrouted.status is ChangesRunStatus.ROW_CHECKS_FAILED and misrouted.failed
    assert (misrouted.colocation, misrouted.checks_passed) == ("failed", False)
    # Another check failing fails the run; the colocation verdict stays its own.
    other = ChangesRunResult().checked(row_checks(colocation=True, others=False))
    assert other.failed and (other.colocation, other.checks_passed) == ("passed", False)


def test_a_run_that_ended_on_an_error_keeps_what_it_did_and_says_why() -> None:
    so_far = ChangesRunResult(table="shop.orders", rows_written=5, lake_versions=(3,))
    ended = so_far.ended(ChangesRunStatus.TRANSIENT_READ_ERROR, "node n2 timed out")
    assert ended.failed and ended.error == "node n2 timed out"
    assert (ended.rows_written, ended.lake_versions) == (5, (3,))
    assert ended.to_json()["status"] == "transient read error"
