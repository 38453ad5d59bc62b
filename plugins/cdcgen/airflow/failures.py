"""Failures that no retry can fix end the task at once, however many retries it has.

A task's ``retries`` are for a cluster that is briefly unreachable. A refused password
or an untrusted certificate is answered the same way every time, and so is a setting
that is wrong (a malformed Spark Connect URL, an unreadable password or token file):
retrying only delays the one message that names the cause, so it fails the task for good.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import ParamSpec, TypeVar

from cdcgen.adapters.errors import AccessRefused
from cdcgen.env_settings import ConfigError

P = ParamSpec("P")
R = TypeVar("R")


def fail_fast(step: Callable[P, R]) -> Callable[P, R]:
    """``step``, with :class:`AccessRefused` and :class:`ConfigError` turned into
    ``AirflowFailException``."""

    @wraps(step)
    def run(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return step(*args, **kwargs)
        except AccessRefused as exc:
            from airflow.sdk.exceptions import AirflowFailException

            raise AirflowFailException(f"cluster refused access (not retried): {exc}") from exc
        except ConfigError as exc:
            from airflow.sdk.exceptions import AirflowFailException

            raise AirflowFailException(f"configuration refused (not retried): {exc}") from exc

    return run
