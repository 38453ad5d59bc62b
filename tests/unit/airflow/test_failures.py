"""What no retry can fix fails the task for good (cdcgen.airflow.failures)."""

from __future__ import annotations

import pytest
from airflow.sdk.exceptions import AirflowFailException

from cdcgen.adapters.errors import AccessRefused, ConnectionFailed
from cdcgen.airflow.failures import fail_fast
from cdcgen.core.errors import TerminalError
from cdcgen.errors import ConfigError


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


def generation_rejected() -> TerminalError:
    from cdcgen.core.generation import Generation
    from cdcgen.core.time import from_millis
    from cdcgen.pipeline.errors import GenerationRejected
    from cdcgen.pipeline.outcomes import ValidationOutcome

    generation = Generation(from_millis(1_767_225_660_000), "c0ffee00-0000-1000-8000-000000000001")
    outcome = ValidationOutcome(generation, passed=False, summary="stream IDs unique: failed")
    return GenerationRejected(f"{generation.label} failed validation", outcome)


def terminal_errors_of_the_dags() -> list[tuple[TerminalError, str]]:
    """The terminal errors the DAGs' tasks meet, each with what its next step must name."""
    from cdcgen.airflow.errors import JobRefused
    from cdcgen.core.errors import ReplicationError
    from cdcgen.pipeline.errors import RunIncomplete
    from cdcgen.replication.errors import ChangesRejected, SinkSchemaError

    return [
        (AccessRefused("127.0.0.9:9042: authentication refused"), "connection's login"),
        (ConfigError("CDCGEN_PORT: not a port"), "then clear the task"),
        (generation_rejected(), "Param generation_id=2026-01-01T00:01:00.000+00:00"),
        (RunIncomplete("shop.orders: not extracted"), "next run takes up"),
        (ChangesRejected("shop.orders: 1 change(s) not applied"), "mode=bootstrap-replace"),
        (ReplicationError("shop.orders: resume it"), "mode=bootstrap"),
        (SinkSchemaError("sink.orders does not exist"), "source table's definition"),
        (JobRefused("data expired"), "then clear the task"),
    ]


@pytest.mark.parametrize(
    ("error", "words"), terminal_errors_of_the_dags(), ids=lambda v: type(v).__name__
)
def test_a_terminal_failure_ends_with_what_to_do_next(error: TerminalError, words: str) -> None:
    with pytest.raises(AirflowFailException) as failed:
        fail_fast(raising)(error)
    message = str(failed.value)
    assert message.startswith(f"{error.headline()} (not retried): {error}")
    last = message.splitlines()[-1]
    assert last.startswith("Next: ") and words in last, message


def test_a_rejected_generation_names_what_it_holds_back() -> None:
    with pytest.raises(AirflowFailException, match="every newer generation waits behind it"):
        fail_fast(raising)(generation_rejected())


def test_an_error_whose_message_says_what_to_do_adds_nothing() -> None:
    from cdcgen.pipeline.errors import NoTables

    with pytest.raises(AirflowFailException) as failed:
        fail_fast(raising)(NoTables("no CDC-enabled table; name tables in the Param"))
    assert "Next:" not in str(failed.value)
