"""The text that names a lake: a local folder or ``s3://bucket/prefix``, normalised.

One rule for the setting (``CDCGEN_LAKE_PATH``, validated with the configuration) and
for :class:`cdcgen.adapters.lake_store.LakeLocation`, which reaches what it names. A
relative folder is made absolute against this process's working directory: a Spark
cluster's executors run in their own work directories, where it names other files.
"""

from __future__ import annotations

import os
from pathlib import PurePosixPath
from typing import Any
from urllib.parse import unquote, urlparse

from cdcgen.core.errors import LakeUriError

S3_SCHEME = "s3://"


def lake_uri(value: str | os.PathLike[str] | Any) -> str:
    """``value`` as an absolute folder or ``s3://bucket/key`` (no trailing slash);
    ``value`` may also be a location that has its ``uri`` (a LakeLocation)."""
    uri = getattr(value, "uri", None)
    text = uri if isinstance(uri, str) else os.fspath(value)
    if text.startswith(S3_SCHEME):
        bucket, _, key = text[len(S3_SCHEME) :].partition("/")
        if not bucket:
            raise LakeUriError(f"{text}: no bucket (expected s3://bucket/prefix)")
        if has_dot_segment(key):  # S3A and delta-rs resolve them, each its own way
            raise LakeUriError(f"{text}: '.' and '..' are not parts of an S3 key here")
        key = str(PurePosixPath(key)).strip("/") if key.strip("/") else ""
        return f"{S3_SCHEME}{bucket}" + (f"/{key}" if key else "")
    if text.startswith("file://"):
        text = unquote(urlparse(text).path)
    elif "://" in text:
        raise LakeUriError(
            f"{text}: a lake is a local folder or s3://bucket/prefix "
            "(s3:// also serves S3-compatible stores through AWS_ENDPOINT_URL)"
        )
    return os.path.abspath(os.path.expanduser(text))


def has_dot_segment(path: str) -> bool:
    """Whether ``path`` has a ``.`` or ``..`` part (``/`` separated)."""
    return any(part in (".", "..") for part in path.split("/"))


def is_local(uri: str) -> bool:
    return not uri.startswith(S3_SCHEME)


def is_within(uri: str, root: str) -> bool:
    """Whether the normalised lake ``uri`` is ``root`` or lies under it."""
    if is_local(uri) != is_local(root):
        return False
    if is_local(uri):
        return os.path.commonpath([uri, root]) == root
    return uri == root or uri.startswith(root.rstrip("/") + "/")


def run_lake(requested: str, roots: tuple[str, ...]) -> str:
    """A lake a run asks for (the ``lake_path`` Param), accepted only as an absolute folder
    or ``s3://`` location inside one of ``roots`` (the configured lake and
    ``CDCGEN_LAKE_ROOTS``): whoever may trigger a run must not point its writes, and the
    maintenance DAG's vacuum, at any folder the workers can reach. A ``.`` or ``..`` part
    is refused for every scheme, not resolved: each storage client resolves them its own
    way, so the check and the writes could disagree on where the lake is."""
    text = requested.strip()
    if not (text.startswith(S3_SCHEME) or os.path.isabs(text)):
        raise LakeUriError(f"lake_path {text!r}: give an absolute folder or s3://bucket/prefix")
    if has_dot_segment(text.removeprefix(S3_SCHEME)):
        raise LakeUriError(f"lake_path {text!r}: name the folder itself, without '.' or '..'")
    uri = lake_uri(text)
    if not any(is_within(uri, lake_uri(root)) for root in roots):
        raise LakeUriError(
            f"lake_path {uri} is outside the lakes this deployment allows "
            f"({', '.join(roots)}; add roots with CDCGEN_LAKE_ROOTS)"
        )
    return uri
