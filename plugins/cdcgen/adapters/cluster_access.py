"""Getting into a production cluster: credentials and TLS for every driver session.

One :class:`ClusterAccess` is built from the configuration on the driver side (files are
read there, once) and is what every session opens with: the tasks' clients, the
triggerer's clock reader, the Spark driver, and the Spark executors' read sessions, which
receive it inside the task closure. That is why it holds the PEM text rather than
paths (an executor's machine need not have the files) and why it is a frozen, picklable
value whose ``repr`` masks the secrets (``SecretStr``): the closure travels over Spark's
RPC channel, never through argv, the environment or the Spark UI.
"""

from __future__ import annotations

import os
import ssl
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, TypedDict

from pydantic import SecretStr

from cdcgen.errors import ConfigError

if TYPE_CHECKING:
    from cassandra.auth import PlainTextAuthProvider
    from cassandra.policies import LoadBalancingPolicy

    from cdcgen.config import PipelineConfig


@dataclass(frozen=True)
class TlsMaterial:
    """What a TLS session needs, as text: CA bundle (None: system store), client pair."""

    ca_pem: str | None = None
    cert_pem: str | None = None
    key_pem: SecretStr | None = None
    verify_hostname: bool = True


class DriverOptions(TypedDict, total=False):
    """What a cluster's access adds to the driver's ``Cluster(...)`` arguments."""

    protocol_version: int
    auth_provider: PlainTextAuthProvider
    ssl_context: ssl.SSLContext


#: Nodes of each remote datacenter a session keeps connections to: all of them. The
#: clock checks ask every node of every datacenter for its clock (a generation starts
#: everywhere), which the driver does only over a connection to that node.
ALL_REMOTE_HOSTS = sys.maxsize


@dataclass(frozen=True)
class ClusterAccess:
    """Credentials and TLS for one cluster, and the datacenter its requests go to first;
    the empty value is an open cluster whose nodes are all alike."""

    username: str | None = None
    password: SecretStr | None = None
    tls: TlsMaterial | None = None
    local_datacenter: str | None = None

    def routing_policy(self) -> LoadBalancingPolicy:
        """Where a session sends its requests: with a local datacenter, to its replicas of
        the request's token, then its other nodes, then (failing those) the other
        datacenters' nodes; without one, to every node in turn, as on a cluster of one
        datacenter."""
        from cassandra.policies import RoundRobinPolicy, TokenAwarePolicy

        if self.local_datacenter is None:
            return RoundRobinPolicy()
        return TokenAwarePolicy(self.datacenter_policy())

    def datacenter_policy(self) -> LoadBalancingPolicy:
        """The local datacenter's nodes first (the driver's guess, the contact point's
        datacenter, when none is set), every remote node still connected."""
        from cassandra.policies import DCAwareRoundRobinPolicy

        return DCAwareRoundRobinPolicy(
            self.local_datacenter, used_hosts_per_remote_dc=ALL_REMOTE_HOSTS
        )

    def driver_options(self, protocol_version: int | None = None) -> DriverOptions:
        """``Cluster(**options)``: the auth provider and SSL context when needed, and the
        protocol version when one is set (unset, the driver negotiates: ScyllaDB answers
        v5 with a protocol error and the driver steps down to v4)."""
        options = DriverOptions()
        if protocol_version is not None:
            options["protocol_version"] = protocol_version
        if self.username is not None and self.password is not None:
            from cassandra.auth import PlainTextAuthProvider

            options["auth_provider"] = PlainTextAuthProvider(
                self.username, self.password.get_secret_value()
            )
        if self.tls is not None:
            options["ssl_context"] = ssl_context(self.tls)
        return options


def access_for(config: PipelineConfig) -> ClusterAccess:
    """The access ``config`` describes, files read now; a missing file names its setting."""
    settings = config.access
    names = settings.env_names()
    password = settings.password
    if settings.password_file is not None:
        text = _read(settings.password_file, names["password_file"]).strip("\r\n")
        if not text:
            raise ConfigError(f"{names['password_file']}: {settings.password_file} is empty")
        password = SecretStr(text)
    tls = None
    if settings.uses_tls:
        tls = TlsMaterial(
            ca_pem=_optional(settings.tls_ca_file, names["tls_ca_file"]),
            cert_pem=_optional(settings.tls_cert_file, names["tls_cert_file"]),
            key_pem=(
                SecretStr(_read(settings.tls_key_file, names["tls_key_file"]))
                if settings.tls_key_file is not None
                else None
            ),
            verify_hostname=settings.tls_verify_hostname,
        )
    return ClusterAccess(settings.username, password, tls, settings.local_datacenter)


def ssl_context(tls: TlsMaterial) -> ssl.SSLContext:
    """A client context: the nodes' certificates verified (hostname too, unless turned off)."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    if tls.ca_pem is not None:
        context.load_verify_locations(cadata=tls.ca_pem)
    else:
        context.load_default_certs(ssl.Purpose.SERVER_AUTH)
    context.check_hostname = tls.verify_hostname
    context.verify_mode = ssl.CERT_REQUIRED
    if tls.cert_pem is not None and tls.key_pem is not None:
        _load_client_pair(context, tls.cert_pem, tls.key_pem)
    return context


def _load_client_pair(context: ssl.SSLContext, cert_pem: str, key_pem: SecretStr) -> None:
    """``ssl`` loads a key only from a file: a private (0600) one, deleted at once."""
    fd, name = tempfile.mkstemp(prefix="cdcgen-client-", suffix=".pem")
    try:
        with os.fdopen(fd, "w") as handle:
            handle.write(cert_pem.rstrip("\n") + "\n" + key_pem.get_secret_value())
        context.load_cert_chain(name)
    finally:
        os.unlink(name)


def _read(path: Path, setting: str) -> str:
    try:
        return path.expanduser().read_text()
    except OSError as exc:
        raise ConfigError(f"{setting}: cannot read {path}: {exc.strerror}") from None


def _optional(path: Path | None, setting: str) -> str | None:
    return None if path is None else _read(path, setting)
