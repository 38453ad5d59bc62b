"""The secure sandbox: one Cassandra node that demands a password and TLS, as production does.

It runs beside the open sandbox (node 9, on 127.0.0.9:9042, its own directory and cluster
name), so tests can point the pipeline at it while the other sandbox serves the rest.
Cassandra runs ``PasswordAuthenticator`` and client encryption with a PEM key store made
by :mod:`cdcgen_dev.cassandra.certificates`; on first start the default superuser is
replaced by a ``cdcgen`` login whose random password is written to a 0600 file (its
location is what `cdcgen sandbox up --auth --tls` prints, never the password itself).
"""

from __future__ import annotations

import json
import os
import secrets
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import SecretStr

from cdcgen.adapters.cluster_access import ClusterAccess, TlsMaterial
from cdcgen.adapters.cql import CqlClient, connect
from cdcgen.config import PipelineConfig
from cdcgen_dev.cassandra import process
from cdcgen_dev.cassandra.certificates import TlsFiles, ensure_certificates
from cdcgen_dev.cassandra.client import quiet_driver_logs
from cdcgen_dev.cassandra.config import write_node_config
from cdcgen_dev.cassandra.errors import SandboxError
from cdcgen_dev.cassandra.jars import ensure_jars
from cdcgen_dev.cassandra.launcher import check_java, jvm_command, spawn
from cdcgen_dev.cassandra.ports import check_ports_free, port_open
from cdcgen_dev.cassandra.readiness import log_tail
from cdcgen_dev.cassandra.topology import NodeSpec, Topology, default_state_dir
from cdcgen_dev.locking import file_lock

SECURE = "secure"
USERNAME = "cdcgen"
_FIRST_INDEX = 9
_DEFAULT_SUPERUSER = ("cassandra", "cassandra")
_PEM_FACTORY = "org.apache.cassandra.security.PEMBasedSslContextFactory"


@dataclass(frozen=True)
class SecureEndpoint:
    """How a client reaches the secure node: where, as whom, trusting which CA."""

    contact_points: tuple[str, ...]
    port: int
    password_file: Path | None
    tls: TlsFiles | None

    def env(self) -> dict[str, str]:
        """``CDCGEN_*`` variables for the pipeline (the password stays in its file)."""
        env = {
            "CDCGEN_CONTACT_POINTS": ",".join(self.contact_points),
            "CDCGEN_PORT": str(self.port),
        }
        if self.password_file is not None:
            env |= {"CDCGEN_USERNAME": USERNAME, "CDCGEN_PASSWORD_FILE": str(self.password_file)}
        if self.tls is not None:
            env |= {"CDCGEN_TLS": "true", "CDCGEN_TLS_CA_FILE": str(self.tls.ca)}
        return env

    def config(self, **overrides: Any) -> PipelineConfig:
        return PipelineConfig.from_env(self.env()).with_overrides(**overrides)


class SecureSandbox:
    """Start, reach and stop the secure node; ``auth``/``tls`` choose what it demands."""

    def __init__(
        self,
        state_dir: Path | None = None,
        *,
        auth: bool = True,
        tls: bool = True,
        heap: str | None = None,
    ) -> None:
        if not (auth or tls):
            raise ValueError("the secure sandbox needs --auth, --tls or both")
        self.state_dir = state_dir or default_state_dir()
        self.topology = Topology(SECURE, self.state_dir / SECURE, 1, first_index=_FIRST_INDEX)
        self.node: NodeSpec = self.topology.nodes[0]
        self.auth, self.tls, self.heap = auth, tls, heap

    @property
    def password_file(self) -> Path:
        return self.topology.root / "credentials" / USERNAME

    @property
    def tls_files(self) -> TlsFiles:
        return TlsFiles(self.topology.root / "tls")

    def endpoint(self) -> SecureEndpoint:
        return SecureEndpoint(
            (self.node.address,),
            self.node.native_port,
            self.password_file if self.auth else None,
            self.tls_files if self.tls else None,
        )

    def is_running(self) -> bool:
        pid = process.read_pid(self.node.pid_file)
        return pid is not None and process.is_running(pid, str(self.node.yaml_path))

    def up(self, *, timeout: float = 240.0) -> SecureEndpoint:
        """Start the node unless it runs (with the same demands), then wait for a login."""
        deadline = time.monotonic() + timeout
        with file_lock(self.state_dir / ".lock"):
            running = self._running_demands()
            if running is not None and running != self._demands():
                raise SandboxError(
                    f"the secure sandbox runs with {running}; stop it first "
                    "(`cdcgen sandbox down`) to start it with "
                    f"{self._demands()}"
                )
            if running is None:
                self._launch()
            self._wait_for_login(deadline)
        return self.endpoint()

    def down(self) -> list[str]:
        with file_lock(self.state_dir / ".lock"):
            pid = process.read_pid(self.node.pid_file)
            stopped = []
            if pid is not None and process.is_running(pid, str(self.node.yaml_path)):
                process.stop([(pid, str(self.node.yaml_path))], timeout=60.0)
                stopped.append(f"{SECURE}/{self.node.name}")
            process.remove_pid(self.node.pid_file)
            return stopped

    def _demands(self) -> dict[str, bool]:
        return {"auth": self.auth, "tls": self.tls}

    def _running_demands(self) -> dict[str, bool] | None:
        if not self.is_running():
            return None
        marker = self.topology.root / "demands.json"
        return json.loads(marker.read_text()) if marker.is_file() else None

    def _launch(self) -> None:
        check_ports_free(self.node)
        security: dict[str, Any] = {}
        if self.auth:
            security["authenticator"] = "PasswordAuthenticator"
            # Grants enforced, as a production cluster does: the sandbox's own login is
            # a superuser, and a test's restricted role is refused what it lacks.
            security["authorizer"] = "CassandraAuthorizer"
        if self.tls:
            files = ensure_certificates(self.tls_files.root, self.node.address)
            security["client_encryption_options"] = {
                "enabled": True,
                "optional": False,
                "ssl_context_factory": {"class_name": _PEM_FACTORY},
                "keystore": str(files.node),
                "truststore": str(files.ca),
                # Cassandra 5.0 has no "optional" client auth: a client certificate is
                # accepted but not demanded.
                "require_client_auth": False,
            }
        write_node_config(self.node, self.topology, security=security)
        (self.topology.root / "demands.json").write_text(json.dumps(self._demands()))
        # The default superuser exists at once, so the first login need not wait 10 s.
        properties = ("-Dcassandra.superuser_setup_delay_ms=0",)
        command = jvm_command(
            self.node, check_java(), ensure_jars(), heap=self.heap, properties=properties
        )
        spawn(self.node, command)

    def _wait_for_login(self, deadline: float) -> None:
        """Wait until the node accepts our login, creating it on the node's first start."""
        while not port_open(self.node.address, self.node.native_port):
            self._check(deadline, "open its CQL port")
            time.sleep(0.5)
        while True:
            with quiet_driver_logs():
                try:
                    client = self._connect(self._credentials())
                except Exception:
                    client = self._first_login() if self.auth else None
            if client is not None:
                client.close()
                return
            self._check(deadline, "accept a login")
            time.sleep(1.0)

    def _first_login(self) -> CqlClient | None:
        """As the default superuser: create ``cdcgen`` and retire the default password."""
        try:
            client = self._connect(_DEFAULT_SUPERUSER)
        except Exception:
            return None
        try:
            password = secrets.token_urlsafe(24)
            # Recreated rather than altered: a start that died half-way may have left
            # the role, and Cassandra allows one password change per 5 s.
            client.execute(f"DROP ROLE IF EXISTS {USERNAME}")
            client.execute(
                f"CREATE ROLE {USERNAME} WITH PASSWORD = %s AND LOGIN = true AND SUPERUSER = true",
                (password,),
            )
            _write_private(self.password_file, password)
            client.execute("ALTER ROLE cassandra WITH PASSWORD = %s", (secrets.token_urlsafe(24),))
        finally:
            client.close()
        return self._connect(self._credentials())

    def _credentials(self) -> tuple[str, str] | None:
        if not self.auth:
            return None
        if not self.password_file.is_file():
            raise SandboxError("no credentials yet")
        return USERNAME, self.password_file.read_text()

    def _connect(self, credentials: tuple[str, str] | None) -> CqlClient:
        username, password = credentials or (None, None)
        tls = TlsMaterial(ca_pem=self.tls_files.ca.read_text()) if self.tls else None
        access = ClusterAccess(username, SecretStr(password) if password else None, tls)
        return connect(
            [self.node.address], self.node.native_port, connect_timeout=5.0, access=access
        )

    def _check(self, deadline: float, what: str) -> None:
        pid = process.read_pid(self.node.pid_file)
        if pid is None or not process.is_running(pid, str(self.node.yaml_path)):
            raise SandboxError(
                f"the secure node exited before it could {what}", log_tail(self.node)
            )
        if time.monotonic() > deadline:
            raise SandboxError(f"the secure node did not {what} in time", log_tail(self.node))


def _write_private(path: Path, text: str) -> None:
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "w") as handle:
        handle.write(text)
