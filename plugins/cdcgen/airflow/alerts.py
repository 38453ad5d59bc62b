"""Alerts: a run that fails, lags more than ``CDCGEN_ALERT_LAG_SECONDS`` or misses its
deadline tells someone, instead of waiting to be noticed in the report.

Three ways a run turns red, one notifier for all of them (:class:`AlertNotifier`):

* any task that fails calls the DAG's notifiers (``on_failure_callback`` of every task,
  so the alert carries the task's own message and its ``Next:`` line);
* the changes and replication DAGs end with ``check_lag``, which fails naming each
  table, its lag and the threshold when a lag the run's ``summarize`` measured
  (:mod:`cdcgen.airflow.metrics`) is above ``CDCGEN_ALERT_LAG_SECONDS``: a scheduler
  that keeps running a pipeline that falls behind is as bad as one that stopped;
* a run still going some time after it was queued misses its Airflow deadline
  (:func:`deadline_alert`, evaluated by the scheduler, told by the triggerer).

The notifier writes the alert to the log of whatever runs it (the task's log for a
failure) and, when the ``cdcgen_alerts`` connection exists, posts it as JSON to the
webhook that connection names: a team points it at its chat or paging hook, or gives
the DAG factories notifiers of its own (any ``BaseNotifier``).
"""

from __future__ import annotations

import asyncio
import json
import logging
import urllib.error
import urllib.request
from collections.abc import Mapping, Sequence
from datetime import timedelta
from typing import Any, TypedDict

from airflow.sdk import BaseNotifier

from cdcgen.airflow.connections import ALERTS_CONN_ID
from cdcgen.airflow.errors import LagAboveThreshold
from cdcgen.airflow.metrics import LAGS, MetricPoint

log = logging.getLogger(__name__)

#: The setting a lag is held against (its name, for the messages).
LAG_SETTING = LagAboveThreshold.setting

#: Seconds a webhook may take to answer before the alert is logged as not delivered.
WEBHOOK_TIMEOUT_SECONDS = 10


class TaskFailed(TypedDict):
    """The alert of a failed task, as the webhook receives it (JSON)."""

    kind: str
    dag_id: str
    run_id: str | None
    task_id: str
    map_index: int | None
    message: str
    text: str


class DeadlineMissed(TypedDict):
    """The alert of a run past its deadline, as the webhook receives it (JSON)."""

    kind: str
    dag_id: str
    run_id: str | None
    deadline: str | None
    text: str


#: What a notifier sends; ``text`` is the line the log shows.
Alert = TaskFailed | DeadlineMissed


def lags_above(points: Sequence[MetricPoint], threshold: timedelta) -> list[str]:
    """One line per table whose lag is above ``threshold``: table, lag and threshold."""
    limit = threshold.total_seconds()
    return [
        f"{p.tags.get('table', '?')} on {p.tags.get('cluster', '?')}: {p.value:g} s "
        f"{LAGS[p.name]}, above {LAG_SETTING}={limit:g}"
        for p in points
        if p.name in LAGS and p.value > limit
    ]


def check_lag(points: Sequence[MetricPoint], threshold: timedelta | None) -> list[str]:
    """Raise :class:`LagAboveThreshold` when a lag is above ``threshold`` (unset: never);
    otherwise the lags checked, as lines for the task's log."""
    if threshold is None:
        return []
    above = lags_above(points, threshold)
    if above:
        raise LagAboveThreshold("; ".join(above))
    limit = threshold.total_seconds()
    return [
        f"{p.tags.get('table', '?')}: {p.value:g} s {LAGS[p.name]} (at most {limit:g})"
        for p in points
        if p.name in LAGS
    ]


def _attribute(holder: Any, name: str) -> Any:
    if isinstance(holder, Mapping):
        return holder.get(name)
    return getattr(holder, name, None)


def alert_of(context: Mapping[str, Any]) -> Alert:
    """The alert a notifier sends for ``context``: a task's failure (its instance and
    exception) or a missed deadline (the run, as the scheduler passes it: a mapping)."""
    ti, run = context.get("ti"), context.get("dag_run")
    dag_id = _attribute(ti, "dag_id") or _attribute(run, "dag_id") or "?"
    run_id = _attribute(ti, "run_id") or _attribute(run, "run_id") or _attribute(run, "dag_run_id")
    deadline = context.get("deadline")
    if deadline is not None and ti is None:
        when = _attribute(deadline, "deadline_time")
        return DeadlineMissed(
            kind="deadline missed",
            dag_id=dag_id,
            run_id=run_id,
            deadline=None if when is None else str(when),
            text=f"cdcgen: {dag_id} run {run_id} missed its deadline ({when})",
        )
    task_id = _attribute(ti, "task_id") or "?"
    map_index = _attribute(ti, "map_index")
    exception = context.get("exception")
    message = str(exception) if exception is not None else "no message"
    where = task_id if map_index in (None, -1) else f"{task_id}[{map_index}]"
    return TaskFailed(
        kind="task failed",
        dag_id=dag_id,
        run_id=run_id,
        task_id=task_id,
        map_index=map_index,
        message=message,
        text=f"cdcgen: {dag_id} {where} failed in run {run_id}: {message}",
    )


def webhook_url(host: str | None, port: int | None = None) -> str | None:
    """The URL a connection's host names (``https://`` when it names no scheme)."""
    if not host:
        return None
    url = host if "://" in host else f"https://{host}"
    if port and "://" not in host:
        scheme, _, rest = url.partition("://")
        name, slash, path = rest.partition("/")
        url = f"{scheme}://{name}:{port}{slash}{path}"
    return url


def post(url: str, alert: Alert, token: str | None = None) -> int:
    """POST ``alert`` as JSON to ``url``; the answer's status."""
    headers = {"Content-Type": "application/json"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    body = json.dumps(alert, default=str).encode()
    request = urllib.request.Request(url, data=body, headers=headers, method="POST")
    with urllib.request.urlopen(request, timeout=WEBHOOK_TIMEOUT_SECONDS) as answer:
        return int(answer.status)


class AlertNotifier(BaseNotifier):
    """Writes each alert to the log, and posts it to the webhook of the connection
    ``webhook_conn_id`` when it exists (type http: its host is the URL, its password,
    if any, a bearer token). A webhook that fails is logged, never raised: the task
    already failed for its own reason, which the alert must not replace."""

    def __init__(self, webhook_conn_id: str | None = ALERTS_CONN_ID, context: Any = None) -> None:
        super().__init__(context)
        self.webhook_conn_id = webhook_conn_id

    def notify(self, context: Any) -> None:
        alert = alert_of(context)
        log.error("%s", alert["text"])
        target = self._webhook()
        if target is None:
            return
        url, token = target
        try:
            status = post(url, alert, token)
        except (OSError, urllib.error.URLError) as exc:
            log.warning("alert not delivered to %s (%s): %s", self.webhook_conn_id, url, exc)
            return
        log.info("alert posted to %s (HTTP %s)", self.webhook_conn_id, status)

    async def async_notify(self, context: Any) -> None:
        """The deadline alerts' path (the triggerer awaits the notifier)."""
        await asyncio.to_thread(self.notify, context)

    def _webhook(self) -> tuple[str, str | None] | None:
        if not self.webhook_conn_id:
            return None
        from airflow.sdk import BaseHook
        from airflow.sdk.exceptions import AirflowNotFoundException

        try:
            connection = BaseHook.get_connection(self.webhook_conn_id)
        except AirflowNotFoundException:
            return None
        url = webhook_url(connection.host, connection.port)
        return None if url is None else (url, connection.password or None)


def failure_callbacks(
    notifiers: Sequence[BaseNotifier] | None, webhook_conn_id: str
) -> list[BaseNotifier]:
    """Every task's ``on_failure_callback``: the given notifiers, or the default one."""
    return list(notifiers) if notifiers is not None else [AlertNotifier(webhook_conn_id)]


def deadline_alert(deadline: timedelta | None, webhook_conn_id: str) -> Any:
    """A run still going ``deadline`` after it was queued is told by the notifier (the
    scheduler evaluates it; the triggerer runs the notifier). ``None``: no deadline."""
    if deadline is None:
        return None
    from airflow.sdk.definitions.callback import AsyncCallback
    from airflow.sdk.definitions.deadline import DeadlineAlert, DeadlineReference

    return DeadlineAlert(
        reference=DeadlineReference.DAGRUN_QUEUED_AT,
        interval=deadline,
        callback=AsyncCallback(AlertNotifier, kwargs={"webhook_conn_id": webhook_conn_id}),
    )
