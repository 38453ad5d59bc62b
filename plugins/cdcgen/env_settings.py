"""Typed settings read from environment variables: the machinery under
:class:`cdcgen.config.PipelineConfig` and the changes pipeline's settings.

Parsing and validation are pydantic's: each field declares the variable it is read
from, and a bad value is a :class:`ConfigError` naming that variable, in one line.
Durations are seconds, finite, between 0 and :data:`MAX_DURATION`.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from datetime import timedelta
from enum import Enum
from typing import Any, ClassVar, Self, get_args

from pydantic import BaseModel, ConfigDict, Field, ValidationError, ValidationInfo, field_validator

from cdcgen.core.errors import TerminalError


class ConfigError(TerminalError, ValueError):
    """A setting has a value the pipeline cannot use; the message names the setting."""

    summary = "configuration refused"


def env(name: str, default: Any = ..., **kwargs: Any) -> Any:
    """A field read from the environment variable ``name`` (or set by its field name)."""
    return Field(default, validation_alias=name, **kwargs)


class EnvSettings(BaseModel):
    """Settings read from environment variables, immutable, overridable field by field.

    ``EMPTY_IS_A_VALUE`` names fields for which an empty variable means the empty
    string (a keyspace prefix) rather than "unset".
    """

    model_config = ConfigDict(frozen=True, populate_by_name=True, extra="forbid")
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
    def env_names(cls) -> dict[str, str]:
        """Field name -> the environment variable it is read from."""
        return {
            name: str(field.validation_alias)
            for name, field in cls.model_fields.items()
            if isinstance(field.validation_alias, str)
        }

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Self:
        """The settings in ``environ`` (default ``os.environ``), defaults for the rest."""
        environ = os.environ if environ is None else environ
        values = {}
        for name, variable in cls.env_names().items():
            raw = environ.get(variable)
            if raw is not None and (raw != "" or name in cls.EMPTY_IS_A_VALUE):
                values[variable] = raw
        return cls.validated(values)

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
        values = {name: getattr(self, name) for name in self.env_names()}
        return {
            variable: env_text(values[name])
            for name, variable in self.env_names().items()
            # Unset stays unset (a default of None). Credentials never travel in this
            # form, which ends up in XCom and in a child's environment (``ps e``).
            if values[name] is not None and name not in self.NOT_EXPORTED
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
        echo = "input" in error and field not in cls.NOT_EXPORTED  # credentials: never
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
