"""Where each sandbox node lives: its addresses, ports and directories.

Three topologies exist, each in its own directory under the state dir so that
their data never mixes (a node's system keyspace remembers its cluster name and
tokens):

* ``single``  - one node on 127.0.0.1, for most integration tests and the demo;
* ``cluster`` - nodes on 127.0.0.1, .2, .3 in two datacenters (nodes 1 and 2 in ``dc1``,
  node 3 in ``dc2``), for replica, node-failure and datacenter tests;
* ``second``  - one node on 127.0.0.2, a cluster of its own beside ``single``, for
  tests that need two separate clusters (replication to a sink cluster).

Node N always binds 127.0.0.N (Linux routes all of 127/8 to loopback without
aliases), so the CQL (9042) and storage (7000) ports repeat across nodes. JMX
always binds 127.0.0.1, so it is the one port that differs per node. Two
topologies with a node on the same address can never run together
(:func:`conflicting`): ``cluster`` excludes both others, while ``single`` and
``second`` run side by side.

Where a node stands (its datacenter and rack) is what GossipingPropertyFileSnitch reads
from the node's ``cassandra-rackdc.properties``. The cluster is two datacenters so that
what depends on them (a local datacenter, LOCAL_QUORUM, NetworkTopologyStrategy) meets a
real one; SimpleStrategy keyspaces ignore datacenters, so they still place three replicas
on the three nodes. The one-node topologies stand in ``datacenter1``/``rack1``, the names
SimpleSnitch gave every node before, so the data they kept from then still starts.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

SINGLE = "single"
CLUSTER = "cluster"
SECOND = "second"
#: The topologies serving 127.0.0.1:9042, "the sandbox": exactly one of them runs at a time.
TOPOLOGIES: tuple[str, ...] = (SINGLE, CLUSTER)
#: Every topology :class:`~cdcgen_dev.cassandra.cluster.Sandbox` manages.
ALL_TOPOLOGIES: tuple[str, ...] = (*TOPOLOGIES, SECOND)

NATIVE_PORT = 9042
STORAGE_PORT = 7000
JMX_BASE_PORT = 7199

_SIZES = {SINGLE: 1, CLUSTER: 3, SECOND: 1}
# Node N binds 127.0.0.N, so a topology's first index is its first address.
_FIRST_INDEX = {SECOND: 2}
# ``second``'s node2 would get cluster node2's JMX port (7200); 7198 is below the
# 7199-7452 that index-derived ports cover, so it collides with no node of any topology.
_JMX_PORTS = {SECOND: JMX_BASE_PORT - 1}
# Seeds are the founding nodes; a node added later (join-node) is not a seed.
_MAX_SEEDS = 3

#: The datacenter and rack of a node no layout below places (SimpleSnitch's names).
DEFAULT_DATACENTER = "datacenter1"
DEFAULT_RACK = "rack1"
#: Each founding node's datacenter, in index order: two datacenters of unequal size, as a
#: cluster with a main site and a smaller remote one (a node added later joins the first).
_DATACENTERS = {CLUSTER: ("dc1", "dc1", "dc2")}


def default_state_dir() -> Path:
    """The sandbox state dir: $CDCGEN_SANDBOX_DIR, else <repo>/var/cassandra.

    The repository root is found from this file's location (editable install);
    an installed copy without a repository falls back to ./var/cassandra.
    """
    override = os.environ.get("CDCGEN_SANDBOX_DIR")
    if override:
        return Path(override).expanduser().resolve()
    repo = Path(__file__).resolve().parents[4]
    if (repo / "pyproject.toml").is_file():
        return repo / "var" / "cassandra"
    return Path.cwd() / "var" / "cassandra"


@dataclass(frozen=True)
class NodeSpec:
    """One node: 1-based index, address 127.0.0.<index>, its own directory."""

    index: int
    root: Path
    #: Set for a node whose index another topology's node shares (see ``Topology``).
    jmx_port_override: int | None = None
    datacenter: str = DEFAULT_DATACENTER
    rack: str = DEFAULT_RACK

    @property
    def name(self) -> str:
        return f"node{self.index}"

    @property
    def address(self) -> str:
        return f"127.0.0.{self.index}"

    @property
    def native_port(self) -> int:
        return NATIVE_PORT

    @property
    def storage_port(self) -> int:
        return STORAGE_PORT

    @property
    def jmx_port(self) -> int:
        """JMX listens on 127.0.0.1 for every node, hence one port per node."""
        if self.jmx_port_override is not None:
            return self.jmx_port_override
        return JMX_BASE_PORT + self.index - 1

    @property
    def conf_dir(self) -> Path:
        return self.root / "conf"

    @property
    def yaml_path(self) -> Path:
        return self.conf_dir / "cassandra.yaml"

    @property
    def logback_path(self) -> Path:
        return self.conf_dir / "logback.xml"

    @property
    def rackdc_path(self) -> Path:
        """GossipingPropertyFileSnitch's file, found on the classpath (conf comes first)."""
        return self.conf_dir / "cassandra-rackdc.properties"

    @property
    def placement_file(self) -> Path:
        """The datacenter and rack the node's data was made in (``dc rack``): Cassandra
        refuses to start a node whose snitch places it elsewhere than its data says."""
        return self.root / "placement"

    @property
    def placement(self) -> str:
        return f"{self.datacenter} {self.rack}"

    @property
    def triggers_dir(self) -> Path:
        """Empty; set only so Cassandra stops warning that it is missing."""
        return self.conf_dir / "triggers"

    @property
    def data_dir(self) -> Path:
        return self.root / "data"

    @property
    def commitlog_dir(self) -> Path:
        return self.root / "commitlog"

    @property
    def hints_dir(self) -> Path:
        return self.root / "hints"

    @property
    def saved_caches_dir(self) -> Path:
        return self.root / "saved_caches"

    @property
    def cdc_raw_dir(self) -> Path:
        return self.root / "cdc_raw"

    @property
    def log_dir(self) -> Path:
        return self.root / "logs"

    @property
    def system_log(self) -> Path:
        return self.log_dir / "system.log"

    @property
    def stdout_log(self) -> Path:
        """JVM stdout/stderr: start-up crashes land here before logback is up."""
        return self.log_dir / "stdout.log"

    @property
    def tmp_dir(self) -> Path:
        """Exec-able temp dir for JNA/netty native libraries (/tmp may be noexec)."""
        return self.root / "tmp"

    @property
    def pid_file(self) -> Path:
        return self.root / "cassandra.pid"

    def directories(self) -> tuple[Path, ...]:
        return (
            self.conf_dir,
            self.triggers_dir,
            self.data_dir,
            self.commitlog_dir,
            self.hints_dir,
            self.saved_caches_dir,
            self.cdc_raw_dir,
            self.log_dir,
            self.tmp_dir,
        )


@dataclass(frozen=True)
class Topology:
    """A named set of nodes sharing one cluster name and one directory."""

    name: str
    root: Path
    size: int
    #: Node N binds 127.0.0.N: a topology that runs beside the others starts further up.
    first_index: int = 1
    #: A one-node topology's JMX port when its node's index-derived one is another's.
    jmx_port: int | None = None
    #: Each founding node's datacenter in index order; empty: all in the default one.
    datacenters: tuple[str, ...] = ()

    @property
    def cluster_name(self) -> str:
        """Distinct per topology so the two can never gossip into one ring."""
        return f"cdcgen-{self.name}"

    def node(self, index: int) -> NodeSpec:
        if not 1 <= index <= 254:
            raise ValueError(f"node index out of range: {index}")
        return NodeSpec(
            index=index,
            root=self.root / f"node{index}",
            jmx_port_override=self.jmx_port,
            datacenter=self.datacenter_of(index),
        )

    def datacenter_of(self, index: int) -> str:
        """Node ``index``'s datacenter: its founding place, else (a node added later, or a
        topology of one datacenter) the first datacenter."""
        if not self.datacenters:
            return DEFAULT_DATACENTER
        position = index - self.first_index
        return self.datacenters[position if 0 <= position < len(self.datacenters) else 0]

    @property
    def nodes(self) -> tuple[NodeSpec, ...]:
        return tuple(self.node(i) for i in range(self.first_index, self.first_index + self.size))

    @property
    def seeds(self) -> tuple[str, ...]:
        return tuple(n.address for n in self.nodes[:_MAX_SEEDS])

    @property
    def contact_points(self) -> tuple[str, ...]:
        return tuple(n.address for n in self.nodes)

    def existing_nodes(self) -> tuple[NodeSpec, ...]:
        """Nodes with a directory on disk, including any added beyond ``size``."""
        if not self.root.is_dir():
            return ()
        found = sorted(
            int(p.name[4:]) for p in self.root.glob("node*") if p.is_dir() and p.name[4:].isdigit()
        )
        return tuple(self.node(i) for i in found)


def topology(name: str, state_dir: Path | None = None) -> Topology:
    """The topology called ``name`` (one of :data:`ALL_TOPOLOGIES`)."""
    if name not in _SIZES:
        raise ValueError(f"unknown topology {name!r}; expected one of {ALL_TOPOLOGIES}")
    root = (state_dir or default_state_dir()) / name
    return Topology(
        name=name,
        root=root,
        size=_SIZES[name],
        first_index=_FIRST_INDEX.get(name, 1),
        jmx_port=_JMX_PORTS.get(name),
        datacenters=_DATACENTERS.get(name, ()),
    )


def topology_for_nodes(nodes: int, state_dir: Path | None = None) -> Topology:
    """Map ``--nodes 1|3`` to its topology (``single`` or ``cluster``, never ``second``)."""
    for name in TOPOLOGIES:
        if _SIZES[name] == nodes:
            return topology(name, state_dir)
    raise ValueError(f"unsupported node count {nodes}; use 1 or 3")


def resolve(which: int | str, state_dir: Path | None = None) -> Topology:
    """A topology by node count (1 or 3, as ``--nodes``) or by name (e.g. ``"second"``)."""
    if isinstance(which, str):
        return topology(which, state_dir)
    return topology_for_nodes(which, state_dir)


def conflicting(name: str) -> tuple[str, ...]:
    """The other topologies with a node on one of ``name``'s addresses.

    They can never run together: both nodes would bind the same CQL and storage
    ports. ``single`` and ``cluster`` share 127.0.0.1, ``second`` and ``cluster``
    share 127.0.0.2; ``single`` and ``second`` share nothing.
    """
    mine = _indexes(name)
    return tuple(other for other in ALL_TOPOLOGIES if other != name and mine & _indexes(other))


def _indexes(name: str) -> set[int]:
    first = _FIRST_INDEX.get(name, 1)
    return set(range(first, first + _SIZES[name]))
