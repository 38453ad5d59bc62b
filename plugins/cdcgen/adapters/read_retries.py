"""Retrying one request of a log read: exponential backoff with full jitter, error classes.

Errors are split like dlt splits them (:func:`cdcgen.adapters.errors.is_transient`, the
one definition): transient ones (timeouts, unavailable replicas, overload, lost
connections) are retried with backoff; terminal ones (invalid query, no permission) fail
at once, because retrying cannot fix them. What is still failing after every attempt
leaves as :class:`TransientReadError`, so the caller (a DAG retry, the next run) knows a
later attempt may succeed.
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import timedelta
from typing import TypeVar

from cdcgen.adapters.errors import TerminalReadError, TransientReadError, is_transient, unavailable

log = logging.getLogger(__name__)

T = TypeVar("T")


@dataclass(frozen=True)
class Backoff:
    """Exponential backoff with full jitter: attempt ``n`` waits ``U(0, min(max, base*2^n))``."""

    max_attempts: int = 6
    base: timedelta = timedelta(milliseconds=200)
    cap: timedelta = timedelta(seconds=20)

    def delay(self, attempt: int, rng: random.Random) -> float:
        ceiling = min(self.cap.total_seconds(), self.base.total_seconds() * (2**attempt))
        return rng.uniform(0, ceiling)


@dataclass
class ReadStats:
    """What a reader did; tasks report it so a run can show retries and query counts."""

    queries: int = 0
    pages: int = 0
    rows: int = 0
    retries: int = 0
    errors: list[str] = field(default_factory=list)


def with_retries(
    call: Callable[[], T],
    what: str,
    backoff: Backoff,
    stats: ReadStats,
    sleep: Callable[[float], None] = time.sleep,
    rng: random.Random | None = None,
    hosts_down: Callable[[], list[str]] | None = None,
) -> T:
    """Run ``call``; retry transient errors with backoff; raise a classified error.

    ``hosts_down`` (the nodes the driver sees down) lets a last ``Unavailable`` name them.
    """
    rng = rng or random.Random()
    for attempt in range(backoff.max_attempts):
        try:
            return call()
        except Exception as exc:
            if not is_transient(exc):
                raise TerminalReadError(f"{what}: {type(exc).__name__}: {exc}") from exc
            stats.errors.append(f"{type(exc).__name__}: {exc}")
            if attempt + 1 >= backoff.max_attempts:
                named = unavailable(exc, [])
                if named is not None and hosts_down is not None:
                    named = unavailable(exc, hosts_down())
                why = named or f"{type(exc).__name__}: {exc}"
                raise TransientReadError(
                    f"{what}: still failing after {backoff.max_attempts} attempts: {why}"
                ) from exc
            stats.retries += 1
            pause = backoff.delay(attempt, rng)
            log.warning("%s: %s; retrying in %.2fs", what, type(exc).__name__, pause)
            sleep(pause)
    raise AssertionError("unreachable")  # pragma: no cover
