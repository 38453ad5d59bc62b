"""``GenerationStartedSensor``: the "wait" step of a generation, deferrable by default.

It checks the node clocks once; if some node is not yet past ``T + leeway`` it
hands the wait to :class:`GenerationStartedTrigger` and frees its worker slot.
On timeout it fails with a message naming every lagging or unreachable node.
``@task`` functions cannot defer, hence a class.  The hook (and so the
connection) is touched only in ``execute``; ``__init__`` stores parameters.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from airflow.sdk import BaseSensorOperator
from airflow.sdk.exceptions import AirflowException

from cdcgen.airflow.connections import SOURCE_CONN_ID
from cdcgen.airflow.hooks import CdcSourceHook
from cdcgen.airflow.triggers import (
    STARTED,
    ClockCheck,
    GenerationStartedTrigger,
    clock_settings,
    from_millis,
    read_clocks_once,
)

if TYPE_CHECKING:
    from airflow.sdk import Context

    from cdcgen.config import PipelineConfig

# The deferral's own timeout is a safety net behind the trigger's, which names nodes.
_DEFER_MARGIN = timedelta(minutes=1)


def generation_ts_ms(generation: Mapping[str, Any] | int) -> int:
    """Accept a detected generation dict (``timestamp_ms``) or a bare millisecond timestamp."""
    if isinstance(generation, Mapping):
        return int(generation["timestamp_ms"])
    return int(generation)


class GenerationStartedSensor(BaseSensorOperator):
    """Succeeds once every node's clock is past the generation's timestamp plus leeway.

    :param generation: the generation (a dict from the detect task with
        ``timestamp_ms``, or a millisecond timestamp); templated, so a mapped task
        group can pass its mapped argument.
    :param cdc_conn_id: the source cluster connection.
    :param wait_timeout: how long to wait before failing; default: the connection's
        ``clock_wait_timeout``.
    :param clock_poll_interval: seconds between clock readings while waiting.
    :param deferrable: wait in the triggerer (default) instead of a worker slot.
    """

    template_fields = ("generation",)
    ui_color = "#e8f0fe"

    def __init__(
        self,
        *,
        generation: Any,
        cdc_conn_id: str = SOURCE_CONN_ID,
        wait_timeout: timedelta | None = None,
        clock_poll_interval: float = 1.0,
        deferrable: bool = True,
        **kwargs: Any,
    ) -> None:
        kwargs.setdefault("poke_interval", clock_poll_interval)
        super().__init__(**kwargs)
        self.generation = generation
        self.cdc_conn_id = cdc_conn_id
        self.wait_timeout = wait_timeout
        self.clock_poll_interval = clock_poll_interval
        self.deferrable = deferrable

    def _config(self) -> PipelineConfig:
        return CdcSourceHook(self.cdc_conn_id).get_config()

    #: Named in the timeout message; ``None``: "generation <timestamp>".
    subject: str | None = None

    def _margin(self, config: PipelineConfig) -> timedelta:
        """How far past the timestamp every clock must be."""
        return config.generation_leeway

    def _check(self, config: PipelineConfig) -> ClockCheck:
        target = from_millis(generation_ts_ms(self.generation)) + self._margin(config)
        return ClockCheck(target, tuple(read_clocks_once(config)))

    def execute(self, context: Context) -> Any:
        if not self.deferrable:
            return super().execute(context)
        config = self._config()
        ts_ms = generation_ts_ms(self.generation)
        try:
            check = self._check(config)
        except Exception as exc:
            from cdcgen.airflow.triggers import transient_error

            if not transient_error(exc):
                raise
            self.log.info("first clock reading failed (%s); deferring", exc)
        else:
            if check.ready:
                self.log.info("every node is past %s; not deferring", check.target.isoformat())
                return {"generation_ts_ms": ts_ms, "target": check.target.isoformat()}
            self.log.info("waiting in the triggerer: %s", check.describe())
        timeout = self.wait_timeout or config.clock_wait_timeout
        self.defer(
            trigger=GenerationStartedTrigger(
                generation_ts_ms=ts_ms,
                source=clock_settings(config),
                leeway_seconds=self._margin(config).total_seconds(),
                timeout_seconds=timeout.total_seconds(),
                poll_interval=self.clock_poll_interval,
                subject=self.subject,
            ),
            method_name="execute_complete",
            timeout=timeout + _DEFER_MARGIN,
        )

    def execute_complete(self, context: Context, event: Mapping[str, Any] | None = None) -> Any:
        """Resumed from the trigger: succeed, or fail naming the nodes that kept it waiting."""
        if not event:
            raise AirflowException("GenerationStartedTrigger ended without an event")
        if event.get("status") != STARTED:
            raise AirflowException(event.get("message") or f"clock wait failed: {event!r}")
        self.log.info("generation started on every node: %s", event.get("clocks"))
        return {"generation_ts_ms": event["generation_ts_ms"], "target": event["target"]}

    def poke(self, context: Context) -> bool:
        """Poke mode (``deferrable=False``): one reading per poke, lagging nodes logged."""
        check = self._check(self._config())
        if not check.ready:
            self.log.info("not yet: %s", check.describe())
        return check.ready


class WindowClosedSensor(GenerationStartedSensor):
    """Succeeds once every node's clock is past a window end + leeway + confidence window.

    The changes DAG's wait: a log row may carry a write time up to a node's clock skew
    in the past, so a window ``[start, end)`` is complete only when no node can still
    write below ``end``. ``generation`` is the window end (a record with
    ``timestamp_ms`` or milliseconds), the same deferral and messages as a generation's.
    """

    subject = "changes window end"

    def _margin(self, config: PipelineConfig) -> timedelta:
        return config.generation_leeway + config.confidence_window
