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
import threading
from dataclasses import fields

import numpy as np

from cdcgen.adapters.lake_store import LakeLocation, LakeRoot
from cdcgen.core.gc_pause import paused_collections
from cdcgen.generation_lake.description_columns import DescriptionColumns
from cdcgen.generation_lake.description_json import columns_from_bytes
from cdcgen.generation_lake.errors import ArtifactError

DOCUMENTS_DIR = "documents"


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


_parsed_lock = threading.Lock()
_parsed: dict[str, DescriptionColumns] = {}


def read_description_document(lake: LakeRoot, digest: str) -> DescriptionColumns:
    """The description document ``digest``: read and checked every time, parsed once.

    Validation reads a generation's description for its entries and again for its
    report, and a process that also publishes reads it a third time; parsing costs far
    more than reading and hashing. Bytes with the
    same digest parse the same, so the last parse is kept (its arrays read-only), while
    every read still checks the document against its name.
    """
    raw = read_document(lake, digest)
    with _parsed_lock:
        found = _parsed.get(digest)
    if found is not None:
        return found
    with paused_collections():  # for the JSON parser: 1.6M strings in 25,600 lists
        columns = columns_from_bytes(raw)
    for field in fields(columns):
        value = getattr(columns, field.name)
        if isinstance(value, np.ndarray):
            value.flags.writeable = False
    with _parsed_lock:
        _parsed.clear()  # only one: a description can be hundreds of MB
        _parsed[digest] = columns
    return columns
