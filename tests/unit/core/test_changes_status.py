"""A changes run's status: the strings the result files hold, and only ``done`` a success
(cdcgen.core.changes_status)."""

from __future__ import annotations

import json

import pytest

from cdcgen.core.changes_result import ChangesRunResult
from cdcgen.core.changes_status import ChangesRunStatus

#: What the result files and the DAG's summary have always said, member by member.
WRITTEN = {
    ChangesRunStatus.DONE: "done",
    ChangesRunStatus.ROW_CHECKS_FAILED: "row checks failed",
    ChangesRunStatus.FOLLOWING: "following (stopped before the end of its follow)",
    ChangesRunStatus.DATA_EXPIRED: "data expired: re-bootstrap needed",
    ChangesRunStatus.TRANSIENT_READ_ERROR: "transient read error",
    ChangesRunStatus.TRANSIENT_ERROR: "transient error",
    ChangesRunStatus.REFUSED: "refused",
    ChangesRunStatus.FAILED: "failed",
    ChangesRunStatus.NOT_EXTRACTED: "not extracted",
}


@pytest.mark.parametrize("status", list(ChangesRunStatus))
def test_a_status_is_written_and_read_back_as_the_string_it_always_was(
    status: ChangesRunStatus,
) -> None:
    text = json.dumps(ChangesRunResult(status=status).to_json())
    assert json.loads(text)["status"] == WRITTEN[status]
    assert ChangesRunResult.from_json(json.loads(text)).status is status


def test_only_done_is_a_success() -> None:
    assert [s for s in ChangesRunStatus if s.done] == [ChangesRunStatus.DONE]
    assert [s for s in ChangesRunStatus if not s.failed] == [ChangesRunStatus.DONE]


def test_a_status_this_version_does_not_know_is_read_as_written_and_is_a_failure() -> None:
    """A file of another version, with a status not among the members: still read (the
    summary must say what it said), never as a success."""
    old = {"table": "shop.orders", "rows_written": 4, "status": "exploded", "error": "boom"}
    result = ChangesRunResult.from_json(old)
    assert result.status == "exploded" and f"{result.status}" == "exploded"
    assert result.status.failed and not result.status.done and result.failed
    assert result.status not in list(ChangesRunStatus)
    assert json.loads(json.dumps(result.to_json())) == old
    # A file without a status (an older success) is done, as it always was.
    assert ChangesRunResult.from_json({"rows_written": 4}).status is ChangesRunStatus.DONE


def test_a_status_that_is_not_a_string_is_not_a_result() -> None:
    with pytest.raises(ValueError, match="status"):
        ChangesRunResult.from_json({"status": 3})
