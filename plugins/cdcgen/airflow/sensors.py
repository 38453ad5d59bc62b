"""The DAGs' wait steps, deferrable by default: every node's clock past an instant.

* :class:`GenerationStartedSensor`: a generation has started everywhere once every clock
  is past its timestamp plus leeway (:func:`cdcgen.core.clocks.generation_started_at`);
* :class:`WindowClosedSensor`: a changes window is closed once every clock is past its end
  plus leeway plus the confidence window (:func:`cdcgen.core.clocks.window_closes_at`).

Each checks the clocks once; if some node is not there yet it hands the wait to
:class:`~cdcgen.airflow.triggers.ClockPastTrigger` and frees its worker slot. On timeout it
fails with a message naming every lagging or unreachable node, terminal: a retry would
only wait the whole timeout again before the same message. ``@task`` functions cannot
defer, hence classes. The hook (and so the connection) is touched only in ``execute``.

Give each wait one retry all the same (:data:`WAIT_RETRIES`). Airflow 3.3's scheduler may
still read the success that the worker reported when it deferred only after the resumed
attempt is already queued or running, take it for a task killed from outside and fail a
wait that is about to succeed (apache/airflow#72716; the fix in 3.3.2 covers only a
resumed attempt that is still scheduled). With a retry left, that failure is a retry,
the next attempt finds every clock past and returns at once, and the steps after the
wait are not marked ``upstream_failed``.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from airflow.sdk import BaseSensorOperator
from airflow.sdk.exceptions import AirflowException

from cdcgen.adapters.clock_sessions import read_clocks_once
from cdcgen.adapters.errors import is_transient
from cdcgen.airflow.connections import SOURCE_CONN_ID
from cdcgen.airflow.errors import ClocksNotPast
from cdcgen.airflow.failures import fail_fast
from cdcgen.airflow.hooks import CdcSourceHook
from cdcgen.airflow.triggers import STARTED, ClockEvent, ClockPastTrigger, clock_settings
from cdcgen.airflow.xcom import from_xcom
from cdcgen.core.clocks import ClockCheck, generation_started_at, window_closes_at
from cdcgen.core.generation import Generation
from cdcgen.core.time import from_millis, to_millis

if TYPE_CHECKING:
    from airflow.sdk import Context

    from cdcgen.config import PipelineConfig

# The deferral's own timeout is a safety net behind the trigger's, which names nodes.
_DEFER_MARGIN = timedelta(minutes=1)

#: Every wait's ``retries`` (see the module doc): not for the clocks, which end the wait
#: with a terminal error, but for the scheduler's race on a resumed deferral.
WAIT_RETRIES = 1


class ClockPastSensor(BaseSensorOperator):
    """Succeeds once every node's clock is at or past :meth:`target` (see the module doc).

    :param cdc_conn_id: the source cluster connection.
    :param wait_timeout: how long to wait before failing; default: the connection's
        ``clock_wait_timeout``.
    :param clock_poll_interval: seconds between clock readings while waiting.
    :param deferrable: wait in the triggerer (default) instead of a worker slot.
    """

    ui_color = "#e8f0fe"

    def __init__(
        self,
        *,
        cdc_conn_id: str = SOURCE_CONN_ID,
        wait_timeout: timedelta | None = None,
        clock_poll_interval: float = 1.0,
        deferrable: bool = True,
        **kwargs: Any,
    ) -> None:
        kwargs.setdefault("poke_interval", clock_poll_interval)
        super().__init__(**kwargs)
        self.cdc_conn_id = cdc_conn_id
        self.wait_timeout = wait_timeout
        self.clock_poll_interval = clock_poll_interval
        self.deferrable = deferrable

    def target(self, config: PipelineConfig) -> datetime:
        """The instant every clock must have passed."""
        raise NotImplementedError

    def subject(self) -> str:
        """What is waited for, as the messages name it."""
        raise NotImplementedError

    def _config(self) -> PipelineConfig:
        return CdcSourceHook(self.cdc_conn_id).get_config()

    def _check(self, config: PipelineConfig) -> ClockCheck:
        return ClockCheck(self.target(config), tuple(read_clocks_once(config)))

    @fail_fast
    def execute(self, context: Context) -> Any:
        if not self.deferrable:
            return super().execute(context)
        config = self._config()
        target = self.target(config)
        try:
            check = self._check(config)
        except Exception as exc:
            if not is_transient(exc):
                raise
            self.log.info("first clock reading failed (%s); deferring", exc)
        else:
            if check.ready:
                self.log.info("every node is past %s; not deferring", target.isoformat())
                return {"target": target.isoformat()}
            self.log.info("waiting in the triggerer: %s", check.describe())
        timeout = self.wait_timeout or config.clock_wait_timeout
        self.defer(
            trigger=ClockPastTrigger(
                target_ms=to_millis(target),
                source=clock_settings(config, self.cdc_conn_id),
                timeout_seconds=timeout.total_seconds(),
                subject=self.subject(),
                poll_interval=self.clock_poll_interval,
            ),
            method_name="execute_complete",
            timeout=timeout + _DEFER_MARGIN,
        )

    @fail_fast
    def execute_complete(self, context: Context, event: ClockEvent | None = None) -> Any:
        """Resumed from the trigger: succeed, or fail naming the nodes that kept it waiting."""
        if not event:
            raise AirflowException("ClockPastTrigger ended without an event")
        if event.get("status") != STARTED:
            raise ClocksNotPast(event.get("message") or f"clock wait failed: {event!r}")
        self.log.info("every node is past the target: %s", event.get("clocks"))
        return {"target": event["target"]}

    @fail_fast
    def poke(self, context: Context) -> bool:
        """Poke mode (``deferrable=False``): one reading per poke, lagging nodes logged."""
        check = self._check(self._config())
        if not check.ready:
            self.log.info("not yet: %s", check.describe())
        return check.ready


class GenerationStartedSensor(ClockPastSensor):
    """The generations DAG's wait. ``generation``: the detect step's record (templated,
    so a mapped task group can pass its mapped argument)."""

    template_fields = ("generation",)

    def __init__(self, *, generation: Any, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.generation = generation

    def _generation(self) -> Generation:
        return from_xcom(Generation, self.generation)

    def target(self, config: PipelineConfig) -> datetime:
        return generation_started_at(self._generation().timestamp, config.generation_leeway)

    def subject(self) -> str:
        return self._generation().label


class WindowClosedSensor(ClockPastSensor):
    """The changes DAG's wait. ``window_end_ms``: the end of the windows a table's extract
    reads; ``table``: that table, as the messages and the grid name the wait (both
    templated, so a mapped task group can pass its mapped arguments)."""

    template_fields = ("window_end_ms", "table")

    def __init__(self, *, window_end_ms: Any, table: Any = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.window_end_ms = window_end_ms
        self.table = table

    def target(self, config: PipelineConfig) -> datetime:
        end = from_millis(int(self.window_end_ms))
        return window_closes_at(end, config.generation_leeway, config.confidence_window)

    def subject(self) -> str:
        window = f"changes window ending {from_millis(int(self.window_end_ms)).isoformat()}"
        return f"{self.table}: {window}" if self.table else window
