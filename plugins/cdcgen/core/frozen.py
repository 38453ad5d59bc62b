"""Values built once per log row on the apply's path, immutable to the type checker.

A frozen dataclass sets each field through ``object.__setattr__``, which makes building
one about twice as slow as a plain slotted one; the apply builds several per log row (a
row write, its cell changes, its statements, their bound batch), so that cost shows in
its throughput. :func:`frozen_value` makes a plain slotted dataclass that strict type
checking treats as frozen (PEP 681's ``frozen_default``): an assignment to a field is a
type error, as with ``frozen=True``, and equal values hash alike. At run time nothing
stops an assignment; the type check is what guards it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypeVar, dataclass_transform

_Value = TypeVar("_Value")


@dataclass_transform(frozen_default=True)
def frozen_value(cls: type[_Value]) -> type[_Value]:
    """``cls`` as a slotted dataclass, frozen to the type checker."""
    return dataclass(slots=True, unsafe_hash=True)(cls)
