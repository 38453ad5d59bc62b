"""Start, stop and inspect sandbox topologies: the API behind `cdcgen sandbox`.

:class:`Sandbox` manages one topology (``single``, ``cluster`` or ``second``); the
module functions :func:`down_all`, :func:`status_report` and :func:`running_topology`
look at every topology, because ``single`` and ``cluster`` both put node 1 on
127.0.0.1:9042 and so only one can run at a time (and ``cluster`` and ``second``
both bind 127.0.0.2). Every state change holds a lock file in the state dir so
a CLI call and a test session never start the same node twice.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from collections.abc import Sequence
from contextlib import AbstractContextManager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from cdcgen_dev.cassandra import process
from cdcgen_dev.cassandra.config import write_node_config
from cdcgen_dev.cassandra.errors import SandboxError
from cdcgen_dev.cassandra.jars import CASSANDRA_VERSION, ensure_jars, jars_ready
from cdcgen_dev.cassandra.launcher import check_java, jvm_command, nodetool_command, spawn
from cdcgen_dev.cassandra.leases import lessees
from cdcgen_dev.cassandra.ports import check_ports_free, port_open
from cdcgen_dev.cassandra.readiness import wait_for_cql, wait_for_peers_up
from cdcgen_dev.cassandra.secure import SECURE, SecureSandbox
from cdcgen_dev.cassandra.topology import (
    ALL_TOPOLOGIES,
    DEFAULT_DATACENTER,
    DEFAULT_RACK,
    TOPOLOGIES,
    NodeSpec,
    Topology,
    conflicting,
    default_state_dir,
    resolve,
    topology,
)
from cdcgen_dev.locking import file_lock

DEFAULT_START_TIMEOUT = float(os.environ.get("CDCGEN_SANDBOX_START_TIMEOUT", "240"))
DEFAULT_STOP_TIMEOUT = 30.0


@dataclass
class NodeStatus:
    """What `cdcgen sandbox status` reports for one node."""

    topology: str
    name: str
    address: str
    cql_port: int
    jmx_port: int
    datacenter: str
    pid: int | None
    alive: bool
    cql_port_open: bool
    uptime_s: float | None
    rss_mb: int | None
    log: str


@dataclass
class UpResult:
    """Which nodes `up` started and which were already running."""

    topology: str
    started: list[str] = field(default_factory=list)
    already_running: list[str] = field(default_factory=list)
    seconds: float = 0.0
    contact_points: list[str] = field(default_factory=list)


def node_pid(node: NodeSpec) -> int | None:
    """The node's pid if it is running, else None (stale pid files are ignored)."""
    pid = process.read_pid(node.pid_file)
    if pid is not None and process.is_running(pid, _marker(node)):
        return pid
    return None


def node_status(topo: Topology, node: NodeSpec) -> NodeStatus:
    pid = node_pid(node)
    rss = process.rss_bytes(pid) if pid else None
    return NodeStatus(
        topology=topo.name,
        name=node.name,
        address=node.address,
        cql_port=node.native_port,
        jmx_port=node.jmx_port,
        datacenter=node.datacenter,
        pid=pid,
        alive=pid is not None,
        cql_port_open=pid is not None and port_open(node.address, node.native_port),
        uptime_s=process.uptime_seconds(pid) if pid else None,
        rss_mb=rss // 2**20 if rss else None,
        log=str(node.system_log),
    )


class Sandbox:
    """One sandbox topology: ``Sandbox(1)`` is the single node, ``Sandbox(3)`` the cluster,
    ``Sandbox("second")`` the independent one-node cluster on 127.0.0.2."""

    def __init__(
        self, nodes: int | str = 1, *, state_dir: Path | None = None, heap: str | None = None
    ) -> None:
        self.state_dir = state_dir or default_state_dir()
        self.topology = resolve(nodes, self.state_dir)
        self.heap = heap

    @property
    def contact_points(self) -> list[str]:
        return list(self.topology.contact_points)

    def node(self, index: int) -> NodeSpec:
        return self.topology.node(index)

    def is_running(self) -> bool:
        """True if every node of this topology has a live process."""
        return all(node_pid(n) is not None for n in self.topology.nodes)

    def status(self) -> list[NodeStatus]:
        return [node_status(self.topology, n) for n in self.topology.nodes]

    def up(self, *, fresh: bool = False, timeout: float = DEFAULT_START_TIMEOUT) -> UpResult:
        """Start whatever nodes are not running and wait until all are ready.

        Idempotent: running nodes are left alone (and still checked for
        readiness). ``fresh`` first stops this topology and deletes its data.
        """
        began = time.monotonic()
        with self._lock():
            self._refuse_if_other_topology_runs()
            if fresh:
                _stop_nodes(self.topology.nodes, timeout=DEFAULT_STOP_TIMEOUT)
                wipe_topology(self.topology)
            result = UpResult(topology=self.topology.name, contact_points=self.contact_points)
            to_start = [n for n in self.topology.nodes if node_pid(n) is None]
            result.already_running = [n.name for n in self.topology.nodes if n not in to_start]
            self._launch(to_start)
            self._wait_ready(self.topology.nodes, began + timeout)
            result.started = [n.name for n in to_start]
        result.seconds = round(time.monotonic() - began, 1)
        return result

    def down(self, *, wipe: bool = False, timeout: float = DEFAULT_STOP_TIMEOUT) -> list[str]:
        """Stop this topology's nodes; return the names stopped. ``wipe`` deletes data."""
        with self._lock():
            stopped = _stop_nodes(self.topology.existing_nodes(), timeout=timeout)
            if wipe:
                wipe_topology(self.topology)
        return stopped

    def stop_node(
        self, index: int, *, kill: bool = False, timeout: float = DEFAULT_STOP_TIMEOUT
    ) -> None:
        """Stop one node, for failure tests: orderly (SIGTERM) or a crash (``kill``)."""
        node = self.node(index)
        with self._lock():
            pid = node_pid(node)
            if pid is not None and kill:
                process.kill(pid, _marker(node))
            elif pid is not None:
                process.stop([(pid, _marker(node))], timeout=timeout)
            process.remove_pid(node.pid_file)

    def start_node(self, index: int, *, timeout: float = DEFAULT_START_TIMEOUT) -> None:
        """Start one stopped node and wait until it and its peers see each other."""
        node = self.node(index)
        deadline = time.monotonic() + timeout
        with self._lock():
            if node_pid(node) is None:
                self._launch([node])
            # The node just launched is waited for whatever its pid check says this
            # early: CI once saw that check miss it, and its peers then waited for a
            # ring without it until the deadline. If it did die, the wait names it.
            running = [
                n for n in self.topology.existing_nodes() if n == node or node_pid(n) is not None
            ]
            self._wait_ready(running, deadline)

    def nodetool(self, index: int, *args: str, timeout: float = 60.0) -> str:
        """Run nodetool against node ``index`` (e.g. ``"status"``); return its output.

        Slow (a JVM start, seconds): meant for debugging and the odd assertion.
        """
        node = self.node(index)
        command = nodetool_command(node, check_java(), ensure_jars(), *args)
        result = subprocess.run(
            command, capture_output=True, text=True, timeout=timeout, check=False
        )
        if result.returncode != 0:
            raise SandboxError(
                f"nodetool {' '.join(args)} on {node.name} failed (exit {result.returncode})",
                details=(result.stdout + result.stderr)[-4000:],
            )
        return result.stdout

    def _launch(self, nodes: list[NodeSpec]) -> None:
        if not nodes:
            return
        java = check_java()
        lib = ensure_jars()
        self._wipe_if_moved()
        for node in nodes:
            check_ports_free(node)
        for node in nodes:
            write_node_config(node, self.topology)
            spawn(node, jvm_command(node, java, lib, heap=self.heap))

    def _wipe_if_moved(self) -> None:
        """Delete the topology's data if a node's was made in another datacenter or rack
        than the topology now places it in (the three-node cluster's, from before it was
        two datacenters): Cassandra would refuse to start that node. Sandbox data is
        the tests' and the demo's own, made anew by them."""
        moved = [n.name for n in self.topology.existing_nodes() if placement_moved(n)]
        if not moved:
            return
        running = [n.name for n in self.topology.existing_nodes() if node_pid(n) is not None]
        if running:
            raise SandboxError(
                f"the {self.topology.name!r} sandbox's {', '.join(moved)} hold data of "
                f"another datacenter layout while {', '.join(running)} run; stop it with "
                "`cdcgen sandbox down` and start it again (its data is then made anew)"
            )
        wipe_topology(self.topology)

    def _wait_ready(self, nodes: Sequence[NodeSpec], deadline: float) -> None:
        for node in nodes:
            wait_for_cql(node, deadline)
        wait_for_peers_up(list(nodes), deadline)

    def _refuse_if_other_topology_runs(self) -> None:
        """Refuse to start beside a topology that binds one of our addresses."""
        for other in conflicting(self.topology.name):
            if topology_runs(other, self.state_dir):
                shared = sorted(
                    set(self.topology.contact_points)
                    & set(topology(other, self.state_dir).contact_points)
                )
                raise SandboxError(
                    f"the {other!r} sandbox is running on the same address(es) "
                    f"({', '.join(shared)}); stop it first with `cdcgen sandbox down`"
                )

    def _lock(self) -> AbstractContextManager[None]:
        return file_lock(self.state_dir / ".lock")


def topology_runs(name: str, state_dir: Path | None = None) -> bool:
    """True if any node of topology ``name`` has a live process."""
    return any(node_pid(n) is not None for n in topology(name, state_dir).existing_nodes())


def running_topology(state_dir: Path | None = None) -> str | None:
    """The topology serving 127.0.0.1 (``single`` or ``cluster``) with any live node, or None.

    ``second`` is never the answer: it runs beside ``single`` and is no one's default.
    """
    for name in TOPOLOGIES:
        if topology_runs(name, state_dir):
            return name
    return None


def down_all(
    state_dir: Path | None = None, *, wipe: bool = False, timeout: float = DEFAULT_STOP_TIMEOUT
) -> list[str]:
    """Stop every sandbox node of every topology; ``wipe`` deletes all their data."""
    state_dir = state_dir or default_state_dir()
    stopped: list[str] = []
    with file_lock(state_dir / ".lock"):
        for name in ALL_TOPOLOGIES:
            topo = topology(name, state_dir)
            stopped += [f"{name}/{n}" for n in _stop_nodes(topo.existing_nodes(), timeout=timeout)]
            if wipe:
                wipe_topology(topo)
    stopped += SecureSandbox(state_dir).down()
    if wipe and (state_dir / SECURE).is_dir():
        shutil.rmtree(state_dir / SECURE)
    return stopped


def status_report(state_dir: Path | None = None) -> dict[str, Any]:
    """Everything `cdcgen sandbox status` prints, as a JSON-ready dict."""
    state_dir = state_dir or default_state_dir()
    secure = SecureSandbox(state_dir).topology
    topologies = [topology(name, state_dir) for name in ALL_TOPOLOGIES] + [secure]
    nodes = [asdict(node_status(topo, n)) for topo in topologies for n in topo.existing_nodes()]
    return {
        "state_dir": str(state_dir),
        "cassandra_version": CASSANDRA_VERSION,
        "jars_ready": jars_ready(),
        "running": running_topology(state_dir),
        "leased_by": {name: lessees(state_dir, name) for name in ALL_TOPOLOGIES},
        "nodes": nodes,
    }


def placement_moved(node: NodeSpec) -> bool:
    """Whether ``node`` holds data made in another datacenter or rack than its own now.

    Data without a placement file was made under SimpleSnitch (``datacenter1``,
    ``rack1``); a node that never started holds none."""
    if not node.data_dir.is_dir() or not any(node.data_dir.iterdir()):
        return False
    recorded = (
        node.placement_file.read_text().strip()
        if node.placement_file.is_file()
        else f"{DEFAULT_DATACENTER} {DEFAULT_RACK}"
    )
    return recorded != node.placement


def wipe_topology(topo: Topology) -> None:
    """Delete one topology's directory (never the state dir itself)."""
    if topo.root.name in ALL_TOPOLOGIES and topo.root.is_dir():
        shutil.rmtree(topo.root)


def _stop_nodes(nodes: tuple[NodeSpec, ...], *, timeout: float) -> list[str]:
    live = [(n, pid) for n in nodes if (pid := node_pid(n)) is not None]
    process.stop([(pid, _marker(n)) for n, pid in live], timeout=timeout)
    for node in nodes:
        process.remove_pid(node.pid_file)
    return [n.name for n, _ in live]


def _marker(node: NodeSpec) -> str:
    """What identifies this node's JVM in /proc/<pid>/cmdline: its own config path."""
    return str(node.yaml_path)
