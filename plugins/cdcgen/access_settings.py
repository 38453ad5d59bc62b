"""How to get into a cluster: credentials, TLS and the local datacenter, one group of
settings.

Nested in :class:`cdcgen.config.PipelineConfig` as ``access`` and read from the same
flat ``CDCGEN_*`` variables, so the credentials' variable names are written here only:
the hook that replaces them with a connection's login, the triggerer that reads them
for its clock sessions and the submit operator that hands them to a job as a password
file all take them from this model. A password never leaves through :meth:`to_env`
(processes the pipeline starts get a password file), and an error about one never
echoes it. :mod:`cdcgen.adapters.cluster_access` turns the group into what a driver
session opens with.
"""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar, Self

from pydantic import SecretStr, model_validator

from cdcgen.env_settings import EnvSettings, env


class AccessSettings(EnvSettings):
    username: str | None = env("CDCGEN_USERNAME", None, min_length=1, connection="login")
    """The user to log in as; with a password (or a password file), never alone.
    A connection's login and password replace all three credential variables."""
    password: SecretStr | None = env("CDCGEN_PASSWORD", None, connection="password")
    """The user's password. Never handed on: a job the pipeline starts gets it as a
    file readable by its user alone."""
    password_file: Path | None = env("CDCGEN_PASSWORD_FILE", None)
    """A file holding the password (a deployment's secret store); not with
    ``CDCGEN_PASSWORD``. A connection's login and password replace it."""
    tls: bool = env("CDCGEN_TLS", False, connection="extra.tls")
    """TLS to the nodes; on by itself when a CA, certificate or key file is given."""
    tls_ca_file: Path | None = env("CDCGEN_TLS_CA_FILE", None, connection="extra.tls_ca_file")
    """CA bundle the nodes' certificates must chain to (unset: the system's trust store)."""
    tls_cert_file: Path | None = env("CDCGEN_TLS_CERT_FILE", None, connection="extra.tls_cert_file")
    """Client certificate (PEM) for nodes that require one; with its key."""
    tls_key_file: Path | None = env("CDCGEN_TLS_KEY_FILE", None, connection="extra.tls_key_file")
    """The client certificate's private key (PEM); with its certificate."""
    tls_verify_hostname: bool = env(
        "CDCGEN_TLS_VERIFY_HOSTNAME", True, connection="extra.tls_verify_hostname"
    )
    """Whether a node's certificate must name the host it was reached at."""
    local_datacenter: str | None = env(
        "CDCGEN_LOCAL_DATACENTER", None, min_length=1, connection="extra.local_datacenter"
    )
    """The datacenter the pipeline runs beside, on a cluster of several: requests go to
    its nodes first (token-aware), and the pipeline's own state is read and written at
    LOCAL_QUORUM there; the description tables and the generations' metadata stay at
    QUORUM (docs/connecting.md). Unset: every node alike, QUORUM throughout."""

    NOT_EXPORTED: ClassVar[frozenset[str]] = frozenset({"username", "password", "password_file"})
    #: Field names of the credentials (what a connection's login and password replace).
    CREDENTIALS: ClassVar[tuple[str, ...]] = ("username", "password", "password_file")

    @classmethod
    def credential_variables(cls) -> tuple[str, ...]:
        """The variables the credentials are read from."""
        names = cls.env_names()
        return tuple(names[field] for field in cls.CREDENTIALS)

    @classmethod
    def variable(cls, field: str, prefix: str = "CDCGEN_") -> str:
        """The variable of ``field`` under ``prefix`` (``CDCGEN_SINK_`` for a sink's)."""
        return prefix + cls.env_names()[field].removeprefix("CDCGEN_")

    @model_validator(mode="after")
    def _access(self) -> Self:
        names = self.env_names()
        if self.password is not None and self.password_file is not None:
            raise ValueError(f"set {names['password']} or {names['password_file']}, not both")
        has_password = self.password is not None or self.password_file is not None
        if has_password != (self.username is not None):
            raise ValueError(
                f"{names['username']} and a password ({names['password']} or "
                f"{names['password_file']}) go together"
            )
        if (self.tls_cert_file is None) != (self.tls_key_file is None):
            raise ValueError(
                f"{names['tls_cert_file']} and {names['tls_key_file']} go together "
                "(a client certificate needs its key)"
            )
        return self

    @property
    def uses_tls(self) -> bool:
        files = (self.tls_ca_file, self.tls_cert_file, self.tls_key_file)
        return self.tls or any(f is not None for f in files)
