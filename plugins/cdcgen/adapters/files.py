"""Whole-file writes: a reader sees the old content or the new, never a part of either.

The one write-then-rename of the package, for everything another process may read while
it is written: report pages and records, run summaries, the changes extract's result
files, the lake's JSON objects in a folder. Its own module, under every layer that
writes such files, so that none of them has to import another to share it.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


def write_atomic(path: Path, data: str | bytes, mode: int = 0o644) -> None:
    """Write through a temporary file beside ``path`` and a rename over it, so a reader
    (the API server, a browser, another task's build, the run's summary step) never sees
    half a file; ``mode`` applies before the rename (the temporary file is the owner's
    only from its first byte, so a secret never becomes readable by others)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data.encode("utf-8") if isinstance(data, str) else data)
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
