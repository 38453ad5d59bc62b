"""The configuration reference is generated from the settings models and kept current."""

from __future__ import annotations

from cdcgen.config import PipelineConfig
from cdcgen.settings_reference import COMMAND, DOC, END, SECTIONS, START, render, updated
from cdcgen_dev.paths import REPO_ROOT


def test_the_committed_reference_is_the_generated_one() -> None:
    page = (REPO_ROOT / DOC).read_text()
    assert updated(page) == page, f"{DOC.name} is out of date: run {COMMAND}"


def test_every_setting_is_in_the_reference_with_a_meaning_and_its_overriding_field() -> None:
    text = render()
    for section in SECTIONS:
        for name, variable in section.model.env_names().items():
            row = next(line for line in text.splitlines() if line.startswith(f"| `{variable}` |"))
            meaning = row.rstrip(" |").rsplit(" | ", 1)[-1]
            assert meaning.strip(), f"{variable} ({name}) has no description"
    for field, variable in PipelineConfig.connection_settings().items():
        row = next(line for line in text.splitlines() if line.startswith(f"| `{variable}` |"))
        assert f"| `{field}` |" in row
    assert "CDCGEN_CHANGES_READ_CONSISTENCY" in text and "CDCGEN_SPARK_MASTER" in text
    assert START not in text and END not in text
