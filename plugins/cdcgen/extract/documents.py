"""The lake's JSON documents (generation descriptions, rings), named by their SHA-256.

::

    <lake>/documents/<sha256>.json

A document is written whole then renamed, and never changes: its name is its digest,
so writing it again is a no-op, a reader checks what it reads against its name, and a
table version that names a digest names exactly one document.
"""

from __future__ import annotations

import hashlib
import uuid
from pathlib import Path

DOCUMENTS_DIR = "documents"


class ArtifactError(Exception):
    """Terminal: a generation that is not extracted, or altered since extraction."""


def document_path(lake: Path, digest: str) -> Path:
    """Where the JSON document of SHA-256 ``digest`` is kept."""
    return Path(lake) / DOCUMENTS_DIR / f"{digest}.json"


def read_document(lake: Path, digest: str) -> bytes:
    """A document, after checking it still has the digest that names it."""
    path = document_path(lake, digest)
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise ArtifactError(f"{path}: {exc.strerror or exc}") from exc
    found = hashlib.sha256(raw).hexdigest()
    if found != digest:
        raise ArtifactError(
            f"{path} changed since extraction (sha256 {found}); extract the generation again"
        )
    return raw


def write_document(lake: Path, data: bytes) -> str:
    """Keep ``data`` under its SHA-256 (written whole, then renamed); returns the digest."""
    digest = hashlib.sha256(data).hexdigest()
    path = document_path(lake, digest)
    if not path.is_file():
        path.parent.mkdir(parents=True, exist_ok=True)
        staging = path.with_name(f".{path.name}.{uuid.uuid4().hex[:12]}")
        staging.write_bytes(data)
        staging.replace(path)
    return digest
