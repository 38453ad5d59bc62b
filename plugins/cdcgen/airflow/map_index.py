"""What a mapped task shows in the grid: its table or generation, not ``[3]``.

Every task of the DAGs' mapped groups (a generation's wait, extract and validate; a
table's wait, extract, bootstrap and apply) carries the group's ``generation`` or
``table`` argument: a ``@task`` by keyword (its ``op_kwargs``), an operator as an attribute (a
templated field, so that the group's mapped argument reaches it). Airflow renders a
task's ``map_index_template`` with the task's context when the task starts and again
when it ends, so one template reads either from ``task`` through :func:`map_label`, a
macro of every DAG the factories build. A task that never starts (its upstream failed)
keeps its index.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

#: The macro's name in the DAGs' template environment.
MACRO = "cdc_map_label"

#: Every mapped task's ``map_index_template`` (set on the mapped groups' ``default_args``).
TEMPLATE = "{{ " + MACRO + "(task) }}"

#: The arguments that name what a mapped task works on, in the order they are looked for.
LABELLED = ("generation", "table")


def generation_label(generation: Any) -> str:
    """A generation as the grid names it: its timestamp (which the ``generation_id``
    Param accepts), and for a tablets stream set its table first."""
    from cdcgen.airflow.xcom import from_xcom
    from cdcgen.core.generation import Generation

    value = from_xcom(Generation, generation)
    return f"{value.table} {value.iso}" if value.table else value.iso


def map_label(task: Any) -> str:
    """The label of a mapped ``task`` (an operator after its fields were rendered): its
    generation, else its table, else "" (Airflow then shows the index)."""
    generation, table = (_argument(task, name) for name in LABELLED)
    if generation:
        return generation_label(generation)
    if table:
        return str(table)
    return ""


def _argument(task: Any, name: str) -> Any:
    """The task's argument ``name``: a ``@task``'s keyword (``op_kwargs``), else an
    operator's attribute."""
    kwargs = getattr(task, "op_kwargs", None)
    value = kwargs.get(name) if isinstance(kwargs, Mapping) else None
    return getattr(task, name, None) if value is None else value


#: The DAGs' ``user_defined_macros``.
MACROS: dict[str, Any] = {MACRO: map_label}

#: A mapped group's ``default_args``: every task in it names its table or generation.
GROUP_DEFAULTS: dict[str, Any] = {"map_index_template": TEMPLATE}
