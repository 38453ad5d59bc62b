"""A Data Docs folder is replaced only when Data Docs wrote it (cdcgen.validation.docs_folder)."""

from __future__ import annotations

from pathlib import Path

import pytest

from cdcgen.validation.docs_folder import MARKER, check_docs_folder, replace_docs_folder
from cdcgen.validation.errors import ReportFolderError


def tree(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


def test_a_new_or_empty_folder_becomes_a_marked_data_docs_folder(tmp_path: Path) -> None:
    for folder in (tmp_path / "new" / "docs", tmp_path / "empty"):
        (tmp_path / "empty").mkdir(exist_ok=True)
        replace_docs_folder(folder)
        assert tree(folder) == [MARKER]


def test_marked_and_earlier_data_docs_are_replaced(tmp_path: Path) -> None:
    marked = tmp_path / "marked"
    replace_docs_folder(marked)
    (marked / "validations").mkdir()
    (marked / "index.html").write_text("old")
    (marked / "notes.txt").write_text("inside a marked folder: Data Docs' own")
    earlier = tmp_path / "earlier"  # written before the marker existed
    (earlier / "validations" / "suite").mkdir(parents=True)
    (earlier / "static").mkdir()
    (earlier / "index.html").write_text("old")
    for folder in (marked, earlier):
        replace_docs_folder(folder)
        assert tree(folder) == [MARKER]


@pytest.mark.parametrize(
    "entries",
    [
        ["index.html", "runs/"],  # the report site itself
        ["index.html", "static/"],  # a web page with assets, no validations
        ["index.html", "validations/", "home.txt"],
        ["README"],
    ],
)
def test_any_other_folder_is_refused_and_left_whole(tmp_path: Path, entries: list[str]) -> None:
    folder = tmp_path / "folder"
    folder.mkdir()
    for entry in entries:
        (folder / entry.rstrip("/")).mkdir() if entry.endswith("/") else (folder / entry).touch()
    before = tree(folder)
    with pytest.raises(ReportFolderError, match="nothing was deleted"):
        replace_docs_folder(folder)
    assert tree(folder) == before


def test_a_file_is_not_a_report_folder(tmp_path: Path) -> None:
    (tmp_path / "f").write_text("x")
    with pytest.raises(ReportFolderError, match="is a file"):
        check_docs_folder(tmp_path / "f")
