"""Typed records in and out of XCom: the one place they become JSON.

The pipeline passes typed values (:class:`~cdcgen.core.generation.Generation`,
:class:`~cdcgen.pipeline.outcomes.ValidationOutcome`, ...); Airflow stores task results as
JSON. pydantic's ``TypeAdapter`` converts both ways and validates on the way in (a
generation timestamp finer than the millisecond is refused, as everywhere else). A
record with a JSON form of its own (a run's summary, a replication record: the same
JSON its file holds) goes out in that form, so a task's XCom and the file agree.
"""

from __future__ import annotations

from typing import Any, Protocol, TypeVar, runtime_checkable

from pydantic import TypeAdapter

T = TypeVar("T")

_ADAPTERS: dict[type[Any], TypeAdapter[Any]] = {}


@runtime_checkable
class OwnJson(Protocol):
    """A record that says its own JSON form (:meth:`to_json`)."""

    def to_json(self) -> object: ...


def _adapter(kind: type[Any]) -> TypeAdapter[Any]:
    """One adapter per type: building one compiles a validator."""
    adapter = _ADAPTERS.get(kind)
    if adapter is None:
        adapter = _ADAPTERS[kind] = TypeAdapter(kind)
    return adapter


def to_xcom(value: Any) -> Any:
    """A typed record (or a list of them) as JSON-compatible values."""
    if isinstance(value, list | tuple):
        return [to_xcom(item) for item in value]
    if isinstance(value, OwnJson):
        return value.to_json()
    return _adapter(type(value)).dump_python(value, mode="json")


def from_xcom(kind: type[T], data: Any) -> T:
    """The typed record ``data`` was made from."""
    result: T = _adapter(kind).validate_python(data)
    return result


def list_from_xcom(kind: type[T], data: Any) -> list[T]:
    """A list of typed records; ``None`` (an upstream task failed) is an empty list."""
    return [from_xcom(kind, item) for item in data or ()]


def list_or_none_from_xcom(kind: type[T], data: Any) -> list[T] | None:
    """A list of typed records, or ``None`` when the upstream task left none (it failed:
    a summary says so, where an empty list would read as "nothing to do")."""
    return None if data is None else list_from_xcom(kind, data)
