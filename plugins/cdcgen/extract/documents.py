"""The lake's JSON documents (generation descriptions, rings), named by their SHA-256.

::

    <lake>/documents/<sha256>.json

A document is written whole (on disk: then renamed; on S3 one put) and never changes:
its name is its digest,
so writing it again is a no-op, a reader checks what it reads against its name, and a
table version that names a digest names exactly one document.
"""

from __future__ import annotations

import hashlib

from cdcgen.adapters.lake_store import LakeLocation, LakeRoot

DOCUMENTS_DIR = "documents"


class ArtifactError(Exception):
    """Terminal: a generation that is not extracted, or altered since extraction."""


def document_path(lake: LakeRoot, digest: str) -> LakeLocation:
    """Where the JSON document of SHA-256 ``digest`` is kept."""
    return LakeLocation.of(lake) / DOCUMENTS_DIR / f"{digest}.json"


def read_document(lake: LakeRoot, digest: str) -> bytes:
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


def write_document(lake: LakeRoot, data: bytes) -> str:
    """Keep ``data`` under its SHA-256 (written whole, once); returns the digest."""
    digest = hashlib.sha256(data).hexdigest()
    document_path(lake, digest).create_bytes(data)  # there already: the same bytes
    return digest
