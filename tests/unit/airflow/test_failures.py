"""What no retry can fix fails the task for good (cdcgen.airflow.failures)."""

from __future__ import annotations

import pytest
from airflow.sdk.exceptions import AirflowFailException

from cdcgen.adapters.errors import AccessRefused, ConnectionFailed
from cdcgen.airflow.failures import fail_fast
from cdcgen.env_settings import ConfigError


def raising(error: Exception) -> None:
    raise error


@pytest.mark.parametrize(
    ("error", "words"),
    [
        (AccessRefused("127.0.0.9:9042: authentication refused"), "cluster refused access"),
        (ConfigError("CDCGEN_SPARK_REMOTE: no port"), "configuration refused"),
    ],
)
def test_a_refusal_or_a_wrong_setting_ends_the_task_naming_it(error: Exception, words: str) -> None:
    with pytest.raises(AirflowFailException, match=f"{words} \\(not retried\\): {error}"):
        fail_fast(raising)(error)


def test_a_transient_failure_is_left_to_the_task_s_retries() -> None:
    with pytest.raises(ConnectionFailed):
        fail_fast(raising)(ConnectionFailed("no node answered"))
