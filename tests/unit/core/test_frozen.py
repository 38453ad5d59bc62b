"""Per-row values: cheap slotted dataclasses that the type check holds frozen."""

from __future__ import annotations

import textwrap
from pathlib import Path

from mypy import api

from cdcgen.core.operations.mutations import SetValue


def test_a_value_is_slotted_equal_by_fields_and_hashable() -> None:
    value = SetValue("c", 1)
    assert not hasattr(value, "__dict__")
    assert value == SetValue("c", 1) and value != SetValue("c", 2)
    assert {value, SetValue("c", 1)} == {value}


def test_the_type_check_refuses_an_assignment_to_a_field(tmp_path: Path) -> None:
    snippet = tmp_path / "assigns.py"
    snippet.write_text(
        textwrap.dedent(
            """
            from cdcgen.core.operations.mutations import SetValue

            value = SetValue("c", 1)
            value.value = 2
            """
        )
    )
    out, _, status = api.run(["--strict", "--no-incremental", str(snippet)])
    assert status == 1, out
    assert 'Property "value" defined in "SetValue" is read-only' in out
