"""A terminal error ends the task at once, however many retries it has; a transient one
is left to them.

A task's ``retries`` are for what may not happen again: a cluster briefly unreachable, a
copy stopped part-way. A refused password, a setting that is wrong, corrupt metadata, a
generation that failed validation are answered the same way every time: retrying only
delays the one message that names the cause. The error's kind decides
(:func:`cdcgen.adapters.errors.is_terminal`, from :mod:`cdcgen.core.errors`), never the
task that met it: every task body, sensor and operator of the package goes through
:func:`fail_fast`, and the Spark jobs say the same with their exit status. Its message
ends with the error's next step, one rule for every task (:func:`failure_message`).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import ParamSpec, TypeVar

from cdcgen.adapters.errors import is_terminal
from cdcgen.core.errors import TerminalError

P = ParamSpec("P")
R = TypeVar("R")


def fail_fast(step: Callable[P, R]) -> Callable[P, R]:
    """``step``, with a terminal error turned into ``AirflowFailException`` (not retried)."""

    @wraps(step)
    def run(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return step(*args, **kwargs)
        except Exception as exc:
            if not is_terminal(exc):
                raise
            from airflow.sdk.exceptions import AirflowFailException

            raise AirflowFailException(failure_message(exc)) from exc

    return run


def failure_message(exc: BaseException) -> str:
    """The failure message of a task that met the terminal ``exc``: what went wrong, the
    error's own text, and last what to do next (:meth:`TerminalError.what_next`), so
    that the line an on-call engineer reads first and last says how to get going."""
    if not isinstance(exc, TerminalError):
        return f"{type(exc).__name__} (not retried): {exc}"
    message = f"{exc.headline()} (not retried): {exc}"
    step = exc.what_next()
    return f"{message}\nNext: {step}" if step else message
