"""What cdcgen tells Airflow about itself: the ``apache_airflow_provider`` entry point.

Airflow's provider manager reads :func:`get_provider_info` without importing the hooks:
the ``cdcgen`` connection type and its form (every connection extra a setting declares,
:mod:`cdcgen.airflow.hooks`, with the meaning the settings reference prints), the hooks,
operators, sensors and triggers, and the Asset URI scheme that carries the tasks'
OpenLineage datasets (:mod:`cdcgen.airflow.lineage`). The report site's plugin
(:mod:`cdcgen.airflow.reports_plugin`) has an entry point of its own (``airflow.plugins``):
Airflow loads a provider's plugins only when providers are discovered eagerly, which is not
its default. A connection of this type is a source or a sink
cluster; connections of type ``cassandra`` with the same fields keep working, the
connection's type is not what the hook reads.
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version
from typing import Any, TypedDict

from pydantic.fields import FieldInfo

from cdcgen.access_settings import AccessSettings
from cdcgen.airflow.connections import PASS_THROUGH_EXTRAS
from cdcgen.airflow.lineage import SCHEME as LINEAGE_SCHEME
from cdcgen.config import PipelineConfig
from cdcgen.env_settings import connection_field

#: The connection type the provider registers.
CONNECTION_TYPE = "cdcgen"
INTEGRATION = "ScyllaDB CDC"
HOOK = "cdcgen.airflow.hooks.CdcSourceHook"


class FieldSchema(TypedDict):
    """A form field's JSON schema: its JSON type, or null (the field left empty)."""

    type: list[str]


class ConnectionField(TypedDict):
    """One extra field of the connection form, as ``conn-fields`` declares it."""

    label: str
    description: str
    schema: FieldSchema


def get_provider_info() -> dict[str, Any]:
    """The provider's description, as Airflow's ``provider_info.schema.json`` wants it."""
    return {
        "package-name": "cdcgen",
        "name": "cdcgen",
        "description": "Follow ScyllaDB CDC generations exactly: detect, wait, extract, "
        "validate and publish them, extract the changes into Delta Lake, replicate them.",
        "versions": [_version()],
        "integrations": [
            {
                "integration-name": INTEGRATION,
                "external-doc-url": "https://docs.scylladb.com/manual/stable/features/cdc/",
                "tags": ["software"],
            }
        ],
        "hooks": [{"integration-name": INTEGRATION, "python-modules": ["cdcgen.airflow.hooks"]}],
        "operators": [
            {"integration-name": INTEGRATION, "python-modules": ["cdcgen.airflow.spark_submit"]}
        ],
        "sensors": [
            {"integration-name": INTEGRATION, "python-modules": ["cdcgen.airflow.sensors"]}
        ],
        "triggers": [
            {"integration-name": INTEGRATION, "python-modules": ["cdcgen.airflow.triggers"]}
        ],
        # An OpenLineage dataset in the form the hook lineage collector takes (an Asset),
        # and back: how the @task bodies report their inputs and outputs
        # (cdcgen.airflow.lineage).
        "asset-uris": [
            {
                "schemes": [LINEAGE_SCHEME],
                "handler": "cdcgen.airflow.lineage.normalize_uri",
                "to_openlineage_converter": "cdcgen.airflow.lineage.to_openlineage",
            }
        ],
        "connection-types": [
            {
                "hook-class-name": HOOK,
                "hook-name": "cdcgen: a ScyllaDB cluster (CDC source or replication sink)",
                "connection-type": CONNECTION_TYPE,
                "conn-fields": connection_fields(),
                "ui-field-behaviour": {
                    "hidden-fields": ["schema"],
                    "relabeling": {"host": "Contact points", "login": "Username"},
                    "placeholders": {"host": "node1,node2,node3", "port": "9042"},
                },
            }
        ],
    }


def connection_fields() -> dict[str, ConnectionField]:
    """The form's extra fields: each setting a connection extra overrides, then the extras
    passed through to the adapters, each with its meaning."""
    fields: dict[str, ConnectionField] = {}
    models = (PipelineConfig, AccessSettings)
    for model in models:
        for field in model.model_fields.values():
            extra = _extra_key(field)
            if extra is not None:
                fields[extra] = {
                    "label": extra.replace("_", " ").capitalize(),
                    "description": _first_sentence(field.description or ""),
                    "schema": {"type": [_json_type(field), "null"]},
                }
    for key, meaning in PASS_THROUGH_EXTRAS.items():
        fields[key] = {
            "label": key.replace("_", " ").capitalize(),
            "description": _first_sentence(meaning),
            "schema": {"type": ["string", "null"]},
        }
    return fields


def _extra_key(field: FieldInfo) -> str | None:
    overridden = connection_field(field) or ""
    return overridden.removeprefix("extra.") if overridden.startswith("extra.") else None


def _json_type(field: FieldInfo) -> str:
    annotation = str(field.annotation)
    if "bool" in annotation:
        return "boolean"
    if "int" in annotation and "Interval" not in annotation:
        return "integer"
    if "float" in annotation or "timedelta" in annotation:
        return "number"
    return "string"


def _first_sentence(text: str) -> str:
    flat = " ".join(text.split())
    end = flat.find(". ")
    return flat if end < 0 else flat[: end + 1]


def _version() -> str:
    try:
        return version("cdcgen")
    except PackageNotFoundError:  # run from a checkout that was never installed
        return "0.0.0"
