"""`cdcgen changes status` (cdcgen.cli.changes_commands): what people read in its table, and the
arguments it refuses before it connects."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from cdcgen.cli import main
from cdcgen.cli.changes_commands import lag, moment
from cdcgen.core.errors import ExitCode


@pytest.mark.parametrize(
    ("seconds", "shown"),
    [
        (None, "-"),
        (0.4, "0s"),
        (42.9, "42s"),
        (192, "3m12s"),
        (7500, "2h05m"),
        (3 * 86_400 + 4 * 3600 + 59, "3d04h"),
        (-5, "-5s"),  # a watermark ahead of this machine's clock
    ],
)
def test_a_lag_reads_in_its_largest_units(seconds: float | None, shown: str) -> None:
    assert lag(seconds) == shown


def test_a_moment_is_shown_in_utc_to_the_millisecond() -> None:
    east = timezone(timedelta(hours=2))
    assert moment(datetime(2026, 5, 1, 12, 0, 0, 123456, tzinfo=east)) == "2026-05-01 10:00:00.123Z"
    assert moment(datetime(2026, 5, 1, tzinfo=UTC)) == "2026-05-01 00:00:00.000Z"
    assert moment(None) == "-"


def test_a_table_that_is_not_keyspace_dot_table_is_a_usage_error(
    capsys: pytest.CaptureFixture[str],
) -> None:
    status = main(["changes", "status", "--table", "orders"])
    assert status == ExitCode.USAGE
    assert "expected keyspace.table" in capsys.readouterr().err
