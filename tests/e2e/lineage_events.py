"""The OpenLineage events of a test's DAG run, as Airflow's OpenLineage provider writes them
with its file transport: configured by environment only (as a deployment would), one JSON
file per event in a folder of the test's own, read back per task."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

#: The namespace of the runs' jobs (the datasets' are their sources').
JOB_NAMESPACE = "cdcgen-e2e"

Dataset = tuple[str, str]  # (namespace, name)

#: The event types that end a task's run.
ENDED = ("COMPLETE", "FAIL")


def lineage_env(folder: Path) -> dict[str, str]:
    """What turns OpenLineage on for a run: the provider's file transport into
    ``folder`` (a file per event: the events come from processes forked per event)."""
    folder.mkdir(parents=True, exist_ok=True)
    transport = {"type": "file", "log_file_path": str(folder / "event"), "append": False}
    return {
        "AIRFLOW__OPENLINEAGE__TRANSPORT": json.dumps(transport),
        "AIRFLOW__OPENLINEAGE__NAMESPACE": JOB_NAMESPACE,
    }


@dataclass
class TaskLineage:
    """A task's last events (one per map index, COMPLETE or FAIL): what each read and
    wrote."""

    inputs: dict[int, set[Dataset]] = field(default_factory=dict)
    outputs: dict[int, set[Dataset]] = field(default_factory=dict)

    def all_inputs(self) -> set[Dataset]:
        return set().union(*self.inputs.values()) if self.inputs else set()

    def all_outputs(self) -> set[Dataset]:
        return set().union(*self.outputs.values()) if self.outputs else set()


def events(folder: Path) -> list[dict[str, Any]]:
    return [json.loads(path.read_text()) for path in sorted(folder.glob("event*"))]


def finished_tasks(folder: Path, dag_id: str) -> dict[str, TaskLineage]:
    """Per task id of ``dag_id`` (``group.task`` in a group) that ended, the inputs and
    outputs of its ending events (COMPLETE or FAIL) by map index (-1: not mapped)."""
    found: dict[str, TaskLineage] = {}
    for event in events(folder):
        job = event["job"]
        if event["eventType"] not in ENDED or job["namespace"] != JOB_NAMESPACE:
            continue
        dag, _, task_id = str(job["name"]).partition(".")
        if dag != dag_id or not task_id:
            continue
        instance = event["run"]["facets"]["airflow"]["taskInstance"]
        index = instance.get("map_index")
        index = -1 if index is None else int(index)
        lineage = found.setdefault(task_id, TaskLineage())
        lineage.inputs[index] = {(d["namespace"], d["name"]) for d in event.get("inputs", [])}
        lineage.outputs[index] = {(d["namespace"], d["name"]) for d in event.get("outputs", [])}
    return found
