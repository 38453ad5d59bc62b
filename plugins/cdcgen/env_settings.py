"""Typed settings read from environment variables: the machinery under
:class:`cdcgen.config.PipelineConfig` and the changes pipeline's settings.

Parsing and validation are pydantic's: each field declares the variable it is read
from, and a bad value is a :class:`ConfigError` naming that variable, in one line.
Durations are seconds, finite, between 0 and :data:`MAX_DURATION`.
"""

from __future__ import annotations

import math
import os
from collections.abc import Collection, Mapping
from datetime import timedelta
from enum import Enum
from typing import Any, ClassVar, Self, get_args

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)
from pydantic.config import JsonDict
from pydantic.fields import FieldInfo

from cdcgen.errors import ConfigError


def env(name: str, default: Any = ..., *, connection: str | None = None, **kwargs: Any) -> Any:
    """A field read from the environment variable ``name`` (or set by its field name).

    ``connection`` names the field of an Airflow connection (``host``, ``login``, or
    ``extra.<key>``) that sets it instead when a task reads its configuration from one:
    declared here so that the hook and the configuration reference read one list.
    """
    extra: JsonDict | None = {"connection": connection} if connection else None
    return Field(default, validation_alias=name, json_schema_extra=extra, **kwargs)


def connection_field(field: FieldInfo) -> str | None:
    """The connection field that overrides a setting (see :func:`env`), if any."""
    extra = field.json_schema_extra
    value = extra.get("connection") if isinstance(extra, dict) else None
    return str(value) if value else None


class EnvSettings(BaseModel):
    """Settings read from environment variables, immutable, overridable field by field.

    ``EMPTY_IS_A_VALUE`` names fields for which an empty variable means the empty
    string (a keyspace prefix) rather than "unset".

    A field whose type is itself an ``EnvSettings`` is a group of settings nested for its
    readers (``config.access.username``) but flat in the environment and in the keyword
    form: its variables are read, exported and named like the parent's own, and a
    parent's ``with_overrides(username=...)`` reaches into it.
    """

    #: A field's docstring is its description: the configuration reference prints it.
    model_config = ConfigDict(
        frozen=True, populate_by_name=True, extra="forbid", use_attribute_docstrings=True
    )
    EMPTY_IS_A_VALUE: ClassVar[frozenset[str]] = frozenset()
    #: Credentials: :meth:`to_env` leaves them out (a child process gets them another
    #: way), and an error about one never echoes its value.
    NOT_EXPORTED: ClassVar[frozenset[str]] = frozenset()

    def __init__(self, **values: Any) -> None:
        try:
            super().__init__(**values)
        except ValidationError as exc:
            raise ConfigError(_describe(type(self), exc)) from None

    @classmethod
    def nested(cls) -> dict[str, type[EnvSettings]]:
        """Field name -> the group of settings it holds (see the class docstring)."""
        return {
            name: field.annotation
            for name, field in cls.model_fields.items()
            if isinstance(field.annotation, type) and issubclass(field.annotation, EnvSettings)
        }

    @classmethod
    def env_names(cls) -> dict[str, str]:
        """Field name -> the environment variable it is read from, nested groups' too."""
        names = {
            name: str(field.validation_alias)
            for name, field in cls.model_fields.items()
            if isinstance(field.validation_alias, str)
        }
        for group in cls.nested().values():
            names.update(group.env_names())
        return names

    @classmethod
    def connection_settings(cls) -> dict[str, str]:
        """Connection field (``host``, ``extra.<key>``, ...) -> the variable it sets."""
        found = {
            overridden: str(field.validation_alias)
            for field in cls.model_fields.values()
            if (overridden := connection_field(field)) is not None
        }
        for group in cls.nested().values():
            found.update(group.connection_settings())
        return found

    @classmethod
    def secret_fields(cls) -> frozenset[str]:
        """``NOT_EXPORTED``, nested groups' included."""
        return cls.NOT_EXPORTED.union(*(g.secret_fields() for g in cls.nested().values()))

    @classmethod
    def _empty_is_a_value(cls) -> frozenset[str]:
        groups = cls.nested().values()
        return cls.EMPTY_IS_A_VALUE.union(*(g._empty_is_a_value() for g in groups))

    @classmethod
    def read_env(
        cls, environ: Mapping[str, str] | None = None, *, only: Collection[str] = ()
    ) -> dict[str, str]:
        """This model's variables that ``environ`` (default ``os.environ``) sets: the one
        place the product reads its settings from the process environment. ``only``
        (field names) reads those alone: a reader that needs one setting is then not
        failed by another's bad value, and asks for nothing else."""
        environ = os.environ if environ is None else environ
        empty_ok = cls._empty_is_a_value()
        values = {}
        for name, variable in cls.env_names().items():
            if only and name not in only:
                continue
            raw = environ.get(variable)
            if raw is not None and (raw != "" or name in empty_ok):
                values[variable] = raw
        return values

    @classmethod
    def read_env_under(
        cls, prefix: str, environ: Mapping[str, str] | None = None
    ) -> dict[str, str]:
        """This model's variables renamed under ``prefix`` (``CDCGEN_SINK_PORT`` for
        ``CDCGEN_PORT``) that ``environ`` sets, empty ones too: under a prefix, empty says
        "not the unprefixed value" (a sink without the source's TLS file)."""
        environ = os.environ if environ is None else environ
        names = (prefix + v.removeprefix("CDCGEN_") for v in cls.env_names().values())
        return {name: environ[name] for name in names if name in environ}

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Self:
        """The settings in ``environ`` (default ``os.environ``), defaults for the rest."""
        return cls.validated(cls.read_env(environ))

    @model_validator(mode="before")
    @classmethod
    def _nest(cls, data: Any) -> Any:
        """Route a nested group's settings, given flat (by field or variable name), into
        it; its own errors name their variables (:class:`ConfigError`)."""
        if not isinstance(data, dict):
            return data
        data = dict(data)
        for name, group in cls.nested().items():
            fields = {v: f for f, v in group.env_names().items()} | {
                f: f for f in group.env_names()
            }
            flat = {fields[key]: data.pop(key) for key in list(data) if key in fields}
            base = data.get(name)
            if not flat and base is not None:
                continue
            current = dict(base) if isinstance(base, EnvSettings | dict) else {}
            data[name] = group.validated({**current, **flat})
        return data

    def setting(self, name: str) -> Any:
        """The value of setting ``name``, own or of a nested group."""
        if name in type(self).model_fields:
            return getattr(self, name)
        for group_name, group in self.nested().items():
            if name in group.env_names():
                return getattr(self, group_name).setting(name)
        raise KeyError(name)

    @classmethod
    def validated(cls, values: Mapping[str, Any]) -> Self:
        """Settings from values keyed by variable or field name; :class:`ConfigError` names
        the first bad one (see ``__init__``)."""
        return cls(**values)

    @field_validator("*", mode="before")
    @classmethod
    def _durations_in_seconds(cls, value: Any, info: ValidationInfo) -> Any:
        """Every duration setting is given in seconds (a number, or its text)."""
        field = cls.model_fields.get(info.field_name or "")
        if field is None or timedelta not in (field.annotation, *get_args(field.annotation)):
            return value
        return None if value is None else seconds(value)

    def with_overrides(self, **changes: Any) -> Self:
        """A copy with ``changes`` applied, validated like everything else."""
        return self.validated({**dict(self), **changes})

    def to_env(self) -> dict[str, str]:
        """The variables :meth:`from_env` turns back into these settings.

        How a task hands its whole configuration (connection and Params applied) to a
        process it starts, such as a spark-submit job, without a flag per setting.
        """
        values = {name: self.setting(name) for name in self.env_names()}
        secret = self.secret_fields()
        return {
            variable: env_text(values[name])
            for name, variable in self.env_names().items()
            # Unset stays unset (a default of None). Credentials never travel in this
            # form, which ends up in XCom and in a child's environment (``ps e``).
            if values[name] is not None and name not in secret
        }


def env_text(value: Any) -> str:
    """A setting's value as its variable's text (what ``from_env`` parses back)."""
    if isinstance(value, timedelta):
        return repr(value.total_seconds())
    if isinstance(value, tuple):
        return ",".join(str(v) for v in value)
    if isinstance(value, Enum):
        return str(value.value)
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _describe(cls: type[EnvSettings], exc: ValidationError) -> str:
    """The first problem, named by the variable a person sets."""
    names = cls.env_names()
    problems = []
    for error in exc.errors():
        message = str(error["msg"]).removeprefix("Value error, ")
        if not error["loc"]:  # a rule across settings: its message names them
            problems.append(message)
            continue
        located = str(error["loc"][0])  # a field name, or the variable it was given as
        field = next((f for f, v in names.items() if located in (f, v)), located)
        variable = names.get(field, field)
        echo = "input" in error and field not in cls.secret_fields()  # credentials: never
        shown = f"{variable}={error['input']!r}" if echo else variable
        problems.append(f"{shown}: {message}")
    return "; ".join(problems)


#: The longest duration a setting may take: beyond it a clock comparison means nothing.
MAX_DURATION = timedelta(days=365)


def seconds(value: Any) -> Any:
    """Durations are given in seconds (a number, or its text), finite and not negative: a
    negative leeway or window would close before every clock has passed it."""
    if isinstance(value, str):
        try:
            value = float(value)
        except ValueError:
            raise ValueError("expected a number of seconds") from None
    if isinstance(value, int | float) and not isinstance(value, bool):
        if not math.isfinite(value) or not 0 <= value <= MAX_DURATION.total_seconds():
            raise ValueError(f"expected seconds between 0 and {MAX_DURATION.total_seconds():.0f}")
        return timedelta(seconds=value)
    if isinstance(value, timedelta) and not timedelta(0) <= value <= MAX_DURATION:
        raise ValueError(f"expected a duration between 0 and {MAX_DURATION}")
    return value
