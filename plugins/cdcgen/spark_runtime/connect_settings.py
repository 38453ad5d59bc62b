"""Who may use the Spark Connect server, and where it listens: the settings both ends read.

A Connect server runs whatever its clients send, Python included, so one that anyone
can reach is a shell for anyone. The server therefore listens on one configured address
(loopback unless told otherwise) and demands a pre-shared token, which every client
must present; the jobs find the server with ``$CDCGEN_SPARK_REMOTE`` and the token here.

The token is a secret like a password: it is given as ``CDCGEN_SPARK_CONNECT_TOKEN`` or
in a file (``CDCGEN_SPARK_CONNECT_TOKEN_FILE``, for a deployment's secret store), never
on a command line, in a URL (which gets logged) or in :meth:`to_env`'s output, and an
error about it never echoes it.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import ClassVar, Self

from pydantic import SecretStr, field_validator, model_validator

from cdcgen.env_settings import EnvSettings, env
from cdcgen.errors import ConfigError
from cdcgen.spark_runtime.spark_settings import SparkSettings

#: The server the Connect kinds of job run on (``sc://host:port``; see
#: cdcgen.spark_runtime.session).
REMOTE_ENV = SparkSettings.env_names()["remote"]
TOKEN_ENV = "CDCGEN_SPARK_CONNECT_TOKEN"
TOKEN_FILE_ENV = "CDCGEN_SPARK_CONNECT_TOKEN_FILE"
HOST_ENV = "CDCGEN_SPARK_CONNECT_HOST"

#: Short tokens can be guessed; 16 characters of ``secrets.token_urlsafe`` are 96 bits.
MIN_TOKEN_LENGTH = 16
#: What travels in a gRPC header (``authorization: Bearer <token>``) unchanged: printable
#: ASCII without spaces. A newline or a space would be cut or refused by gRPC, and the
#: server would then compare a token the operator never set.
TOKEN_TEXT = re.compile(r"[!-~]+")
#: A host name, an IPv4 address or an unbracketed IPv6 address, nothing else.
HOST_TEXT = re.compile(r"[A-Za-z0-9._:-]+")


class SparkConnectSettings(EnvSettings):
    """The server's address and the token its clients present."""

    host: str = env(HOST_ENV, "127.0.0.1")
    """Where the Spark Connect server listens: loopback by default, so that only this
    machine's processes reach it; a container sets its service address."""
    token: SecretStr | None = env(TOKEN_ENV, None)
    """The token the server demands and its clients present (16 printable characters
    at least); the server does not start without one."""
    token_file: Path | None = env(TOKEN_FILE_ENV, None)
    """A file holding the token (a deployment's secret store); not with the token."""

    NOT_EXPORTED: ClassVar[frozenset[str]] = frozenset({"token", "token_file"})

    @field_validator("host")
    @classmethod
    def _host(cls, value: str) -> str:
        if not HOST_TEXT.fullmatch(value):
            raise ValueError("expected a host name or an IP address")
        return value

    @field_validator("token")
    @classmethod
    def _token(cls, value: SecretStr | None) -> SecretStr | None:
        if value is not None:
            check_token(value.get_secret_value())
        return value

    @model_validator(mode="after")
    def _one_source(self) -> Self:
        if self.token is not None and self.token_file is not None:
            raise ValueError(f"set {TOKEN_ENV} or {TOKEN_FILE_ENV}, not both")
        return self

    def secret(self) -> SecretStr | None:
        """The token, its file read now; None when neither is set."""
        if self.token_file is None:
            return self.token
        try:
            text = self.token_file.read_text().strip("\r\n")
        except OSError as exc:
            raise ConfigError(
                f"{TOKEN_FILE_ENV}: cannot read {self.token_file} ({exc.strerror})"
            ) from None
        try:
            check_token(text)
        except ValueError as exc:
            raise ConfigError(f"{TOKEN_FILE_ENV}: {self.token_file}: {exc}") from None
        return SecretStr(text)

    def required_secret(self) -> SecretStr:
        """The token, for the server: without one it would serve anyone who connects."""
        token = self.secret()
        if token is None:
            raise ConfigError(
                f"{TOKEN_ENV} or {TOKEN_FILE_ENV}: not set; the Spark Connect server runs its "
                "clients' code and does not start without a token they must present"
            )
        return token


def check_token(text: str) -> None:
    """Refuse a token that is too short or would not reach the server as it is (the
    message never contains the token)."""
    if len(text) < MIN_TOKEN_LENGTH:
        raise ValueError(f"the token is shorter than {MIN_TOKEN_LENGTH} characters")
    if not TOKEN_TEXT.fullmatch(text):
        raise ValueError("the token may hold printable ASCII only, no spaces or line breaks")
