"""A lag above the threshold, a failed task, a missed deadline: told (cdcgen.airflow.alerts)."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Iterator
from datetime import timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import SimpleNamespace
from typing import Any

import pytest

from cdcgen.airflow import alerts
from cdcgen.airflow.alerts import AlertNotifier
from cdcgen.airflow.errors import LagAboveThreshold
from cdcgen.airflow.metrics import Kind, MetricPoint

ORDERS = {"cluster": "cdc_source", "table": "shop.orders"}
CARTS = {"cluster": "cdc_source", "table": "shop.carts"}
POINTS = [
    MetricPoint("cdcgen.changes.rows_extracted", 5000, Kind.COUNTER, ORDERS),
    MetricPoint("cdcgen.changes.watermark_lag_seconds", 4000.5, Kind.GAUGE, ORDERS),
    MetricPoint("cdcgen.replication.sink_lag_seconds", 30, Kind.GAUGE, CARTS),
]


def test_a_lag_above_the_threshold_fails_naming_table_lag_and_threshold() -> None:
    with pytest.raises(LagAboveThreshold) as raised:
        alerts.check_lag(POINTS, timedelta(hours=1))
    assert str(raised.value) == (
        "shop.orders on cdc_source: 4000.5 s behind its watermark, "
        "above CDCGEN_ALERT_LAG_SECONDS=3600"
    )
    assert "CDCGEN_ALERT_LAG_SECONDS" in raised.value.what_next()


def test_every_lag_above_is_named_and_rows_are_no_lag() -> None:
    above = alerts.lags_above(POINTS, timedelta(seconds=10))
    assert len(above) == 2 and "shop.carts on cdc_source: 30 s sink behind" in above[1]


def test_lags_at_or_under_the_threshold_or_no_threshold_pass() -> None:
    assert alerts.check_lag(POINTS, None) == []
    checked = alerts.check_lag(POINTS, timedelta(seconds=4000.5))
    assert checked == [
        "shop.orders: 4000.5 s behind its watermark (at most 4000.5)",
        "shop.carts: 30 s sink behind the source (at most 4000.5)",
    ]


def failure_context(message: str = "lag above the alert threshold: shop.orders") -> dict[str, Any]:
    ti = SimpleNamespace(
        dag_id="cdc_changes", run_id="manual__1", task_id="check_lag", map_index=-1
    )
    return {"ti": ti, "exception": RuntimeError(message)}


def test_a_failed_task_s_alert_names_dag_task_run_and_its_message() -> None:
    alert = alerts.alert_of(failure_context())
    assert alert["kind"] == "task failed"
    assert alert["text"] == (
        "cdcgen: cdc_changes check_lag failed in run manual__1: "
        "lag above the alert threshold: shop.orders"
    )
    mapped = failure_context()
    mapped["ti"].map_index = 2
    assert "check_lag[2] failed" in alerts.alert_of(mapped)["text"]


def test_a_missed_deadline_s_alert_names_the_run_and_its_deadline() -> None:
    context = {
        "dag_run": {"dag_id": "cdc_generations", "dag_run_id": "scheduled__2026"},
        "deadline": {"id": "d1", "deadline_time": "2026-11-28T10:00:00+00:00"},
    }
    alert = alerts.alert_of(context)
    assert alert["kind"] == "deadline missed"
    assert alert["text"] == (
        "cdcgen: cdc_generations run scheduled__2026 missed its deadline "
        "(2026-11-28T10:00:00+00:00)"
    )


@pytest.mark.parametrize(
    ("host", "port", "url"),
    [
        ("https://hooks.example.com/T1/B2", None, "https://hooks.example.com/T1/B2"),
        ("hooks.example.com/alerts", 8443, "https://hooks.example.com:8443/alerts"),
        ("", None, None),
    ],
)
def test_the_connection_s_host_is_the_webhook_s_url(
    host: str, port: int | None, url: str | None
) -> None:
    assert alerts.webhook_url(host, port) == url


class Hook:
    """A webhook on loopback that keeps what it receives."""

    def __init__(self) -> None:
        self.received: list[tuple[dict[str, Any], str | None]] = []
        received = self.received

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["Content-Length"]))
                received.append((json.loads(body), self.headers.get("Authorization")))
                self.send_response(204)
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/alerts"


@pytest.fixture
def hook(monkeypatch: pytest.MonkeyPatch) -> Iterator[Hook]:
    served = Hook()
    thread = threading.Thread(target=served.server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    connection = {"conn_type": "http", "host": served.url, "password": "hook-token-1"}
    monkeypatch.setenv("AIRFLOW_CONN_TEST_ALERTS", json.dumps(connection))
    yield served
    served.server.shutdown()
    served.server.server_close()


def test_the_notifier_logs_the_alert_and_posts_it_to_the_connection_s_webhook(
    hook: Hook, caplog: pytest.LogCaptureFixture
) -> None:
    AlertNotifier("test_alerts").notify(failure_context())
    ((alert, authorization),) = hook.received
    assert alert == alerts.alert_of(failure_context()) | {"map_index": -1}
    assert authorization == "Bearer hook-token-1"
    assert alert["text"] in caplog.text


def test_a_deadline_is_told_through_the_triggerer_s_path(hook: Hook) -> None:
    context = {"dag_run": {"dag_id": "d", "run_id": "r"}, "deadline": {"deadline_time": "t"}}
    asyncio.run(AlertNotifier("test_alerts").async_notify(context))
    assert [alert["kind"] for alert, _ in hook.received] == ["deadline missed"]


def test_without_the_connection_or_with_a_dead_webhook_the_alert_is_logged_only(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    AlertNotifier("no_such_alerts_connection").notify(failure_context("first"))
    dead = {"conn_type": "http", "host": "http://127.0.0.1:9/nothing-listens"}
    monkeypatch.setenv("AIRFLOW_CONN_DEAD_ALERTS", json.dumps(dead))
    AlertNotifier("dead_alerts").notify(failure_context("second"))
    assert "failed in run manual__1: first" in caplog.text
    assert "alert not delivered to dead_alerts" in caplog.text


def test_the_dags_tell_the_default_notifier_unless_given_their_own() -> None:
    (default,) = alerts.failure_callbacks(None, "east_alerts")
    assert isinstance(default, AlertNotifier) and default.webhook_conn_id == "east_alerts"
    own = AlertNotifier(None)
    assert alerts.failure_callbacks([own], "east_alerts") == [own]


def test_the_deadline_calls_the_notifier_with_the_alerts_connection() -> None:
    assert alerts.deadline_alert(None, "cdcgen_alerts") is None
    alert = alerts.deadline_alert(timedelta(minutes=30), "east_alerts")
    assert alert.interval == timedelta(minutes=30)
    assert alert.callback.path == "cdcgen.airflow.alerts.AlertNotifier"
    assert alert.callback.kwargs == {"webhook_conn_id": "east_alerts"}


def test_the_default_dags_tell_every_failure_and_check_lag_after_the_summary() -> None:
    from cdcgen.airflow.connections import ClusterConnections
    from cdcgen.airflow.dag_factories import (
        cdc_changes_dag,
        cdc_generations_dag,
        cdc_generations_maintenance_dag,
        cdc_replication_dag,
    )

    east = ClusterConnections(source="east_source", alerts="east_alerts")
    built = {
        factory.__name__: factory(connections=east)
        for factory in (
            cdc_changes_dag,
            cdc_generations_dag,
            cdc_generations_maintenance_dag,
            cdc_replication_dag,
        )
    }
    for name, dag in built.items():
        for task in dag.tasks:
            (notifier,) = task.on_failure_callback
            assert isinstance(notifier, AlertNotifier), (name, task.task_id)
            assert notifier.webhook_conn_id == "east_alerts"
    for name in ("cdc_changes_dag", "cdc_replication_dag"):
        check = built[name].get_task("check_lag")
        # After summarize, and only once it succeeded: a failed summary fails the run
        # through check_lag's upstream_failed, as the DAG's only leaf.
        assert check.upstream_task_ids == {"summarize"} and check.trigger_rule == "all_success"
        assert [t.task_id for t in built[name].leaves] == ["check_lag"]
        assert check.retries == 0
    # No deadline by default (apache/airflow#73428: `airflow dags test` of a DAG with one
    # exits non-zero after a successful run); one given is the DAG's.
    assert all(not dag.deadline for dag in built.values())
    given = cdc_changes_dag(connections=east, deadline=timedelta(minutes=45))
    assert [d.interval for d in given.deadline or ()] == [timedelta(minutes=45)]
