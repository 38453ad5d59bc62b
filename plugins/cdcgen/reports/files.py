"""Whole-file writes for the report directory, shared by every kind of record and page.

Its own module so that record modules (:mod:`.replication_records`) can write through
it while :mod:`.site`, which renders pages from those records, imports them: neither
has to import the other back.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


def write_atomic(path: Path, text: str) -> None:
    """Write through a temporary file and a rename, so a reader (the API server, a
    browser, another task's build) never sees half a page or half a record."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
