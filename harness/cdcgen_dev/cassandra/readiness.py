"""Wait until nodes really serve CQL, and until a cluster's nodes see each other.

"Port open" is not "ready": the native port opens before the node can answer
queries reliably, so readiness ends with a real query. For a cluster, ready
means every node lists the others as peers and can coordinate a CL=ALL read on
an RF=3 system keyspace - which fails with Unavailable while any node's failure
detector still considers a peer DOWN.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from cdcgen_dev.cassandra.client import open_cluster, quiet_driver_logs
from cdcgen_dev.cassandra.errors import SandboxError
from cdcgen_dev.cassandra.ports import port_open
from cdcgen_dev.cassandra.process import is_running, read_pid
from cdcgen_dev.cassandra.topology import NodeSpec

if TYPE_CHECKING:
    from cassandra.cluster import Session

_POLL = 0.5
# system_distributed has RF 3 (SimpleStrategy) from the first start on.
_ALL_PROBE = (
    "SELECT keyspace_name FROM system_distributed.view_build_status "
    "WHERE keyspace_name = %s AND view_name = %s"
)


def log_tail(node: NodeSpec, lines: int = 30) -> str:
    """The last lines of the node's system.log and stdout.log, for error messages."""
    parts = [
        f"--- {path} (last {lines} lines) ---\n{_tail(path, lines)}"
        for path in (node.system_log, node.stdout_log)
        if path.is_file()
    ]
    return "\n".join(parts) or f"(no logs yet in {node.log_dir})"


def wait_for_cql(node: NodeSpec, deadline: float) -> str:
    """Wait for the native port, then for ``release_version``; return the version.

    Fails fast, with the log tail, if the JVM exits meanwhile.
    """
    while not port_open(node.address, node.native_port):
        _check_alive(node)
        _check_deadline(node, deadline, "open its CQL port")
        time.sleep(_POLL)
    while True:
        _check_alive(node)
        version = _release_version(node)
        if version is not None:
            return version
        _check_deadline(node, deadline, "answer CQL queries")
        time.sleep(_POLL)


def wait_for_peers_up(nodes: Sequence[NodeSpec], deadline: float) -> None:
    """Wait until each node lists all others as peers and can run a CL=ALL read."""
    if len(nodes) < 2:
        return
    addresses = [n.address for n in nodes]
    with quiet_driver_logs():
        cluster = open_cluster(addresses)
        try:
            session = cluster.connect()
            while True:
                lagging = [n for n in nodes if not _sees_all_peers(session, n, addresses)]
                if not lagging:
                    return
                for node in lagging:
                    _check_alive(node)
                if time.monotonic() > deadline:
                    names = ", ".join(n.name for n in lagging)
                    raise SandboxError(
                        f"cluster not formed in time: {names} do not see all peers UP",
                        details="\n".join(log_tail(n, 15) for n in lagging),
                    )
                time.sleep(_POLL)
        finally:
            cluster.shutdown()


def _sees_all_peers(session: Session, node: NodeSpec, addresses: Sequence[str]) -> bool:
    """Ask ``node`` itself (not any coordinator) about its view of the ring."""
    from cassandra import ConsistencyLevel
    from cassandra.query import SimpleStatement

    host = session.cluster.metadata.get_host(node.address)
    if host is None or not host.is_up:
        return False
    try:
        peers = session.execute("SELECT peer FROM system.peers_v2", host=host)
        expected = set(addresses) - {node.address}
        if {row.peer for row in peers} != expected:
            return False
        probe = SimpleStatement(_ALL_PROBE, consistency_level=ConsistencyLevel.ALL)
        session.execute(probe, ("cdcgen", "readiness"), host=host)
    except Exception:  # any driver error means "not yet"
        return False
    return True


def _release_version(node: NodeSpec) -> str | None:
    with quiet_driver_logs():
        cluster = open_cluster([node.address], only_these_hosts=True, connect_timeout=3.0)
        try:
            session = cluster.connect()
            row = session.execute("SELECT release_version FROM system.local").one()
            return str(row.release_version) if row else None
        except Exception:  # any driver error means "not yet"
            return None
        finally:
            cluster.shutdown()


def _check_alive(node: NodeSpec) -> None:
    pid = read_pid(node.pid_file)
    if pid is None or not is_running(pid, str(node.yaml_path)):
        raise SandboxError(
            f"{node.name} ({node.address}) exited during start-up; see {node.log_dir}",
            details=log_tail(node),
        )


def _check_deadline(node: NodeSpec, deadline: float, what: str) -> None:
    if time.monotonic() > deadline:
        raise SandboxError(
            f"{node.name} ({node.address}) did not {what} in time; see {node.log_dir}",
            details=log_tail(node),
        )


def _tail(path: Path, lines: int) -> str:
    with path.open("rb") as handle:
        handle.seek(0, 2)
        handle.seek(max(0, handle.tell() - 64 * 1024))
        text = handle.read().decode("utf-8", "replace")
    return "\n".join(text.splitlines()[-lines:])
