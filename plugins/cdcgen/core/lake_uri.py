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

S3_SCHEME = "s3://"


class LakeUriError(ValueError):
    """A lake location that cannot be used (a scheme not supported, no bucket)."""


def lake_uri(value: str | os.PathLike[str] | Any) -> str:
    """``value`` as an absolute folder or ``s3://bucket/key`` (no trailing slash);
    ``value`` may also be a location that has its ``uri`` (a LakeLocation)."""
    uri = getattr(value, "uri", None)
    text = uri if isinstance(uri, str) else os.fspath(value)
    if text.startswith(S3_SCHEME):
        bucket, _, key = text[len(S3_SCHEME) :].partition("/")
        if not bucket:
            raise LakeUriError(f"{text}: no bucket (expected s3://bucket/prefix)")
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


def is_local(uri: str) -> bool:
    return not uri.startswith(S3_SCHEME)
