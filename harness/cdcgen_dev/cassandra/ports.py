"""Port checks: is a port free to bind, is a node's CQL port accepting?

Checked before start so that "port taken by something else" is reported
clearly instead of surfacing as a bind exception deep in the node's log.
"""

from __future__ import annotations

import errno
import socket
import time

from cdcgen_dev.cassandra.errors import SandboxError
from cdcgen_dev.cassandra.topology import NodeSpec


def can_bind(address: str, port: int) -> bool:
    """True if a listener could bind ``address:port`` now.

    SO_REUSEADDR mirrors what Cassandra sets, so lingering TIME_WAIT connections
    do not count as "taken"; a listener on 0.0.0.0 or the same address does.
    """
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((address, port))
        except OSError as exc:
            if exc.errno in (errno.EADDRINUSE, errno.EACCES):
                return False
            raise
    return True


def port_open(address: str, port: int, timeout: float = 0.5) -> bool:
    """True if something accepts TCP connections on ``address:port``."""
    try:
        with socket.create_connection((address, port), timeout=timeout):
            return True
    except OSError:
        return False


def node_ports(node: NodeSpec) -> list[tuple[str, str, int]]:
    """(purpose, address, port) for every port the node listens on."""
    return [
        ("CQL", node.address, node.native_port),
        ("storage", node.address, node.storage_port),
        ("JMX", "127.0.0.1", node.jmx_port),
    ]


def taken_ports(node: NodeSpec) -> list[str]:
    return [
        f"{purpose} {address}:{port}"
        for purpose, address, port in node_ports(node)
        if not can_bind(address, port)
    ]


def check_ports_free(node: NodeSpec, *, grace: float = 5.0) -> None:
    """Raise if another process holds one of the node's ports.

    Waits up to ``grace`` seconds first: a node that was just stopped may still
    be releasing its sockets.
    """
    deadline = time.monotonic() + grace
    taken = taken_ports(node)
    while taken and time.monotonic() < deadline:
        time.sleep(0.25)
        taken = taken_ports(node)
    if taken:
        raise SandboxError(
            f"cannot start {node.name}: port(s) already in use by another process: "
            + ", ".join(taken)
            + " (find it with `ss -ltnp`; is another Cassandra or sandbox running?)"
        )
