"""Each task starts with a hook lineage collector of its own (cdcgen.airflow.lineage_listener),
through the package's plugin, before the OpenLineage listener reads it."""

from __future__ import annotations

from airflow.sdk.lineage import get_hook_lineage_collector

from cdcgen.airflow import lineage_listener
from cdcgen.airflow.reports_plugin import CdcgenReportsPlugin


def test_a_starting_task_gets_a_new_collector() -> None:
    before = get_hook_lineage_collector()
    lineage_listener.on_task_instance_running(previous_state=None, task_instance=None)
    assert get_hook_lineage_collector() is not before


def test_the_package_s_plugin_registers_it_to_run_first() -> None:
    assert lineage_listener in CdcgenReportsPlugin.listeners
    options = lineage_listener.on_task_instance_running.airflow_impl  # type: ignore[attr-defined]
    assert options["tryfirst"] is True
