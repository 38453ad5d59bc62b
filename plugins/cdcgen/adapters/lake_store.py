"""Where the lake lives: a local folder or an S3 prefix, and how each engine reaches it.

``CDCGEN_LAKE_PATH`` is a folder (the default, ``lake/``) or ``s3://bucket/prefix`` on
AWS S3 or any S3-compatible store. Four engines touch the lake and each reaches S3 its
own way; :class:`LakeLocation` hands each what it needs from one place:

* delta-rs (the generations tables' commits, readers, vacuum): :meth:`storage_options`;
  its S3 commits are conditional puts (``If-None-Match``), safe with many writers;
* pyarrow (the generations' Parquet files): :meth:`arrow`;
* Spark (the changes tables): :attr:`spark_uri` (``s3a://``) and
  :func:`cdcgen.spark_runtime.s3a.s3a_conf`, its commits conditional puts too
  (:mod:`cdcgen.spark_runtime.log_store`);
* the JSON documents, ring records and listings: the methods here, through obstore
  (Rust's object_store) on S3, with put-if-absent where the first writer must win.

Credentials come from the environment (``AWS_ACCESS_KEY_ID``, ``AWS_SECRET_ACCESS_KEY``,
``AWS_SESSION_TOKEN``), which an Airflow task fills from its connection
(:mod:`cdcgen.airflow.lake_connection`); with ``AWS_REGION`` and, for a store other
than AWS, ``AWS_ENDPOINT_URL``. They are handed to the libraries in memory and never
appear in a location's text, a log line or a Spark setting.
"""

from __future__ import annotations

import os
import uuid
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any, Union, cast
from urllib.parse import urlparse

from cdcgen.adapters.files import write_atomic
from cdcgen.adapters.s3_settings import S3Settings
from cdcgen.core.errors import LakeUriError
from cdcgen.core.lake_uri import S3_SCHEME, is_local, lake_uri

if TYPE_CHECKING:
    from obstore.store import ClientConfig, S3Config
    from pyarrow.fs import FileSystem


#: What a caller may name a lake folder with (:meth:`LakeLocation.of` reads each).
LakeRoot = Union["LakeLocation", str, "os.PathLike[str]"]


@dataclass(frozen=True)
class S3Access:
    """How to reach S3 (from the environment): endpoint and region, and the credentials,
    which no ``repr`` shows."""

    endpoint_url: str | None
    region: str
    credentials: tuple[tuple[str, str], ...]

    def __repr__(self) -> str:
        return f"S3Access(endpoint_url={self.endpoint_url!r}, region={self.region!r})"

    @classmethod
    def from_env(cls) -> S3Access:
        settings = S3Settings.from_env()
        return cls(
            endpoint_url=settings.endpoint_url,
            region=settings.lake_region,
            credentials=settings.credentials(),
        )

    @property
    def allow_http(self) -> bool:
        return bool(self.endpoint_url and self.endpoint_url.startswith("http://"))


@dataclass(frozen=True, order=True)
class LakeLocation:
    """A folder of the lake: an absolute local path, or ``s3://bucket/key``."""

    uri: str

    @classmethod
    def of(cls, value: LakeRoot) -> LakeLocation:
        """The location ``value`` names; a local path is made absolute."""
        if isinstance(value, LakeLocation):
            return value
        return cls(lake_uri(value))

    def __str__(self) -> str:
        return self.uri

    def __fspath__(self) -> str:
        """A local lake is a folder wherever a path is taken; an S3 one is not."""
        if not self.is_local:
            raise TypeError(f"{self.uri} is not a local path")
        return self.uri

    def __truediv__(self, part: str) -> LakeLocation:
        if self.is_local:
            return LakeLocation(str(Path(self.uri) / part))
        return LakeLocation(f"{self.uri.rstrip('/')}/{part.strip('/')}")

    @property
    def is_local(self) -> bool:
        return is_local(self.uri)

    @property
    def path(self) -> Path:
        """The local folder; an S3 location has none."""
        if not self.is_local:
            raise LakeUriError(f"{self.uri}: not a local folder")
        return Path(self.uri)

    @property
    def name(self) -> str:
        return PurePosixPath(self.uri).name

    @property
    def parent(self) -> LakeLocation:
        if self.is_local:
            return LakeLocation(str(Path(self.uri).parent))
        return LakeLocation(self.uri.rsplit("/", 1)[0])

    @property
    def bucket_and_key(self) -> tuple[str, str]:
        bucket, _, key = self.uri[len(S3_SCHEME) :].partition("/")
        return bucket, key

    @property
    def spark_uri(self) -> str:
        """What Spark's Hadoop file systems call it (S3 through S3A)."""
        return self.uri if self.is_local else "s3a://" + self.uri[len(S3_SCHEME) :]

    def storage_options(self) -> dict[str, str] | None:
        """delta-rs's ``storage_options`` (None for a local folder)."""
        if self.is_local:
            return None
        access = S3Access.from_env()
        options = {"AWS_REGION": access.region, **dict(access.credentials)}
        if access.endpoint_url:
            options["AWS_ENDPOINT_URL"] = access.endpoint_url
            options["AWS_VIRTUAL_HOSTED_STYLE_REQUEST"] = "false"
        if access.allow_http:
            options["AWS_ALLOW_HTTP"] = "true"
        return options

    def arrow(self) -> tuple[FileSystem, str]:
        """A pyarrow file system and this location's path in it."""
        from pyarrow.fs import LocalFileSystem

        if self.is_local:
            return LocalFileSystem(), self.uri
        return _arrow_s3(S3Access.from_env()), self.uri[len(S3_SCHEME) :]

    # Whole objects: JSON documents, ring records, the buckets record.

    def read_bytes(self) -> bytes:
        """The object's bytes; FileNotFoundError if there is none."""
        if self.is_local:
            return self.path.read_bytes()
        store, key = self._store()
        import obstore

        return bytes(obstore.get(store, key).bytes())

    def write_bytes(self, data: bytes) -> None:
        """Write the object whole: readers see the old bytes or the new, never a part."""
        if not self.is_local:
            store, key = self._store()
            import obstore

            obstore.put(store, key, data)
            return
        write_atomic(self.path, data)

    def create_bytes(self, data: bytes) -> bool:
        """Write the object only if there is none (atomically); whether it was written.

        An object already there is not written again, not even to a staging copy: a
        generation's description is tens of megabytes, the buckets record is asked for
        by every job."""
        if self._is_object():
            return False
        if not self.is_local:
            import obstore
            from obstore.exceptions import AlreadyExistsError, PreconditionError

            store, key = self._store()
            try:
                obstore.put(store, key, data, mode="create")
            except (AlreadyExistsError, PreconditionError):
                return False
            return True
        staging = self._staging(data)
        try:
            os.link(staging, self.path)  # fails if the name exists: first writer wins
        except FileExistsError:
            return False
        finally:
            staging.unlink()
        return True

    def remove(self) -> None:
        """Delete the object (a file); one that is not there is no error."""
        if self.is_local:
            self.path.unlink(missing_ok=True)
            return
        store, key = self._store()
        import obstore

        obstore.delete(store, key)

    def exists(self) -> bool:
        """Whether an object or a folder is there."""
        if self.is_local:
            return self.path.exists()
        if self._is_object():
            return True
        store, key = self._store()
        import obstore

        listed = obstore.list(store, prefix=key + "/", chunk_size=1)
        return any(len(chunk) for chunk in listed)

    def _is_object(self) -> bool:
        """Whether a file (an object) is there; a folder is not one."""
        if self.is_local:
            return self.path.is_file()
        store, key = self._store()
        import obstore

        try:
            obstore.head(store, key)
        except FileNotFoundError:
            return False
        return True

    def children(self, folders_only: bool = False) -> list[str]:
        """Names of the folders (and objects, unless ``folders_only``) directly under
        this one, sorted."""
        if self.is_local:
            if not self.path.is_dir():
                return []
            found = self.path.iterdir()
            return sorted(p.name for p in found if p.is_dir() or not folders_only)
        store, key = self._store()
        import obstore

        listed = obstore.list_with_delimiter(store, prefix=key + "/")
        names = [PurePosixPath(p).name for p in listed["common_prefixes"]]
        if not folders_only:
            names += [PurePosixPath(o["path"]).name for o in listed["objects"]]
        return sorted(set(names))

    def _staging(self, data: bytes) -> Path:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        staging = self.path.with_name(f".{self.path.name}.{uuid.uuid4().hex[:12]}")
        staging.write_bytes(data)
        return staging

    def _store(self) -> tuple[Any, str]:
        bucket, key = self.bucket_and_key
        return _obstore_s3(bucket, S3Access.from_env()), key


@lru_cache(maxsize=8)
def _obstore_s3(bucket: str, access: S3Access) -> Any:
    from obstore.store import S3Store

    config: dict[str, Any] = {"region": access.region}
    names = {
        "AWS_ACCESS_KEY_ID": "access_key_id",
        "AWS_SECRET_ACCESS_KEY": "secret_access_key",
        "AWS_SESSION_TOKEN": "session_token",
    }
    config.update({names[name]: value for name, value in access.credentials})
    if access.endpoint_url:
        config["endpoint"] = access.endpoint_url
        config["virtual_hosted_style_request"] = False
    client = cast("ClientConfig", {"allow_http": access.allow_http})
    return S3Store(bucket, config=cast("S3Config", config), client_options=client)


@lru_cache(maxsize=8)
def _arrow_s3(access: S3Access) -> FileSystem:
    from pyarrow.fs import S3FileSystem

    given = dict(access.credentials)
    options: dict[str, Any] = {"region": access.region}
    if "AWS_ACCESS_KEY_ID" in given:
        options["access_key"] = given["AWS_ACCESS_KEY_ID"]
        options["secret_key"] = given.get("AWS_SECRET_ACCESS_KEY")
        options["session_token"] = given.get("AWS_SESSION_TOKEN")
    if access.endpoint_url:
        parsed = urlparse(access.endpoint_url)
        options["endpoint_override"] = parsed.netloc
        options["scheme"] = parsed.scheme or "https"
        options["force_virtual_addressing"] = False
    return S3FileSystem(**options)
