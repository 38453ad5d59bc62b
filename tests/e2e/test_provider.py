"""Airflow discovers cdcgen as a provider (the ``apache_airflow_provider`` entry point):
its connection type, the form's fields (every connection extra a setting declares, and
the extras passed through) and the Test button, through Airflow's own provider manager."""

from __future__ import annotations

import json
import socket
from typing import Any

import pytest

from cdcgen.airflow.connections import PASS_THROUGH_EXTRAS
from cdcgen.airflow.hooks import EXTRA_SETTINGS, CdcSourceHook

pytestmark = [pytest.mark.e2e]


def test_airflow_discovers_the_provider_its_connection_form_and_test_button() -> None:
    from airflow.providers_manager import ProvidersManager

    manager = ProvidersManager()
    assert "cdcgen" in manager.providers
    prefix = "extra__cdcgen__"
    widgets = manager.connection_form_widgets
    fields = {name.removeprefix(prefix) for name in widgets if name.startswith(prefix)}
    assert fields == set(EXTRA_SETTINGS) | set(PASS_THROUGH_EXTRAS)
    source_mode = manager.connection_form_widgets[f"{prefix}source_mode"].field
    assert "raft, gossip, v1 or tablets" in source_mode["description"]
    assert manager.field_behaviours["cdcgen"]["hidden_fields"] == ["schema"]
    hook = manager.hooks["cdcgen"]
    assert hook is not None and hook.hook_class_name == "cdcgen.airflow.hooks.CdcSourceHook"
    assert hook.connection_testable


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_the_test_button_names_the_cluster_that_answered_or_why_none_did(
    monkeypatch: pytest.MonkeyPatch, cassandra_single: Any
) -> None:
    reachable = {"conn_type": "cdcgen", "host": "127.0.0.1", "port": 9042}
    monkeypatch.setenv("AIRFLOW_CONN_CDCGEN_BUTTON", json.dumps(reachable))
    ok, message = CdcSourceHook("cdcgen_button").test_connection()
    # The button runs the cluster's checks (cdcgen check): the node answers, but a plain
    # Cassandra holds no ScyllaDB generation metadata (tests/integration/
    # test_check_command.py passes them on an emulated source).
    assert not ok and message.startswith("FAIL  source mode: raft: cannot read "), message
    closed = {**reachable, "port": closed_port()}
    monkeypatch.setenv("AIRFLOW_CONN_CDCGEN_BUTTON", json.dumps(closed))
    ok, message = CdcSourceHook("cdcgen_button").test_connection()
    assert not ok and message.startswith("ConnectionFailed: "), message
    wrong = {**reachable, "extra": {"source_mode": "carrier-pigeon"}}
    monkeypatch.setenv("AIRFLOW_CONN_CDCGEN_BUTTON", json.dumps(wrong))
    ok, message = CdcSourceHook("cdcgen_button").test_connection()
    assert not ok and "CDCGEN_SOURCE_MODE" in message, message
