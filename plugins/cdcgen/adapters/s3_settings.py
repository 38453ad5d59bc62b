"""How to reach an S3 lake: the AWS SDKs' own variables, read as one settings model.

The names are the SDKs' (Spark's S3A reads them from its process environment itself),
so a deployment that already sets them for other tools sets nothing new. An Airflow
task gets them from the ``cdcgen_lake`` connection instead (type aws; its fields win,
:mod:`cdcgen.airflow.lake_connection`). The secret and the session token are
``SecretStr``: no ``repr`` or error message shows them.
"""

from __future__ import annotations

from typing import ClassVar

from pydantic import SecretStr

from cdcgen.env_settings import EnvSettings, env

#: Where the lake is when no region is given (the SDKs' own default).
DEFAULT_REGION = "us-east-1"


class S3Settings(EnvSettings):
    endpoint_url: str | None = env("AWS_ENDPOINT_URL", None, connection="extra.endpoint_url")
    """An S3-compatible store's address (``http://`` allows plain HTTP); unset, AWS S3."""
    region: str | None = env("AWS_REGION", None, connection="extra.region_name")
    """The lake's region; unset, ``AWS_DEFAULT_REGION``, else us-east-1."""
    default_region: str | None = env("AWS_DEFAULT_REGION", None)
    """The region when ``AWS_REGION`` is unset."""
    access_key_id: str | None = env("AWS_ACCESS_KEY_ID", None, connection="login", repr=False)
    """The access key id; unset, the SDKs find credentials themselves (an instance
    role, web identity)."""
    secret_access_key: SecretStr | None = env("AWS_SECRET_ACCESS_KEY", None, connection="password")
    """The access key's secret; with its id."""
    session_token: SecretStr | None = env(
        "AWS_SESSION_TOKEN", None, connection="extra.aws_session_token"
    )
    """A temporary credential's session token."""

    NOT_EXPORTED: ClassVar[frozenset[str]] = frozenset(
        {"access_key_id", "secret_access_key", "session_token"}
    )

    @property
    def lake_region(self) -> str:
        return self.region or self.default_region or DEFAULT_REGION

    def credentials(self) -> tuple[tuple[str, str], ...]:
        """The credentials given, as the SDKs' variable names and values."""
        names = self.env_names()
        given = {
            names["access_key_id"]: self.access_key_id,
            names["secret_access_key"]: _text(self.secret_access_key),
            names["session_token"]: _text(self.session_token),
        }
        return tuple((name, value) for name, value in given.items() if value)


def _text(secret: SecretStr | None) -> str | None:
    return None if secret is None else secret.get_secret_value()
