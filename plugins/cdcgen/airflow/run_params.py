"""A run's Params as one typed value: read once from Airflow's ``params``, where a task
starts, then handed to the task bodies (:mod:`cdcgen.airflow.generation_steps`,
:mod:`cdcgen.airflow.replication_steps`, :mod:`cdcgen.airflow.alert_steps`).

The DAGs declare the Params and Airflow checks them against their schemas when a run is
triggered (:mod:`cdcgen.airflow.dag_factories.shared`); a task body called directly (a test, a
script) may still pass none or a partial mapping, so each field reads as the task bodies
always read it: an empty or missing value is the field's default, and a DAG's Param
another DAG does not declare simply stays at its default there.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict


def _text(value: object) -> str:
    return str(value or "")


def _mode(value: object) -> str:
    return str(value or "apply")


#: A Param read as text: missing, ``None`` or empty is "".
Text = Annotated[str, BeforeValidator(_text)]
#: A Param read as a flag: its truth value (missing is False).
Flag = Annotated[bool, BeforeValidator(bool)]


class RunParams(BaseModel):
    """The Params of a run of any of the DAGs (each declares the ones it uses)."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    #: ``cdc_generations``: only this generation (id, ISO timestamp or ms); "" all.
    generation_id: Text = ""
    #: ``cdc_generations``: re-publish generations already published.
    force: Flag = False
    #: ``cdc_generations``, ``cdc_changes``: the run's lake; "" the configured one.
    lake_path: Text = ""
    #: ``cdc_changes``, ``cdc_replication``: ``keyspace.table[,...]``; "" every one.
    tables: Text = ""
    #: ``cdc_replication``: the sink keyspace; "" the connection's first.
    sink_keyspace: Text = ""
    #: ``cdc_replication``: ``apply``, ``bootstrap`` or ``bootstrap-replace`` (checked by
    #: :func:`cdcgen.airflow.replication_steps.mode_param`, which names the others).
    mode: Annotated[str, BeforeValidator(_mode)] = "apply"
    #: ``cdc_replication``: say what the run would do, write nothing.
    dry_run: Flag = False


def run_params(params: Mapping[str, Any] | None) -> RunParams:
    """The run's Params, typed: Airflow's ``params`` of the task's context (``None``:
    none given)."""
    return RunParams.model_validate(dict(params or {}))
