"""Which folder a validation's Data Docs may replace: only one Data Docs wrote.

A re-validation replaces a generation's old Data Docs, and that means deleting a folder.
The folder comes from a setting or ``cdcgen generation validate --report DIR``, so it may
be anything: the whole report site, a home directory. Data Docs folders written from now
on carry a marker file; one written before the marker existed is recognised by holding
nothing but Data Docs' own entries. Anything else is refused by name and left untouched.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from cdcgen.reports.run_files import MARKER
from cdcgen.validation.errors import ReportFolderError

__all__ = ["MARKER", "ReportFolderError", "check_docs_folder", "replace_docs_folder"]
#: What a GX filesystem Data Docs site holds (``SiteBuilder`` with its index builder).
_DATA_DOCS_ENTRIES = frozenset({"index.html", "static", "validations", "expectations"})


def check_docs_folder(folder: Path) -> None:
    """Raise :class:`ReportFolderError` unless ``folder`` is absent, empty, or Data Docs'."""
    if folder.exists() and not folder.is_dir():
        raise ReportFolderError(f"report folder {folder} is a file")
    entries = {entry.name for entry in folder.iterdir()} if folder.is_dir() else set()
    if not entries or MARKER in entries:
        return
    if "validations" in entries and entries <= _DATA_DOCS_ENTRIES:
        return  # written by an earlier version, before the marker
    others = sorted(entries - _DATA_DOCS_ENTRIES)[:3]
    raise ReportFolderError(
        f"report folder {folder} holds files a validation did not write ({', '.join(others)}"
        f"{', ...' if len(entries - _DATA_DOCS_ENTRIES) > 3 else ''}): "
        "name a new or empty folder; nothing was deleted"
    )


def replace_docs_folder(folder: Path) -> None:
    """Empty ``folder`` for new Data Docs (checked first) and mark it as theirs."""
    check_docs_folder(folder)
    if folder.is_dir():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    (folder / MARKER).write_text("Data Docs of a cdcgen validation: replaced by the next one.\n")
