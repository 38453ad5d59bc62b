"""A real Apache Cassandra 5.0 for development, CI and the demo - from Maven jars.

No ScyllaDB or Docker is available, so the sandbox runs ``CassandraDaemon`` from
the Maven Central jars on the machine's Java 17: one node on 127.0.0.1:9042, or
a three-node cluster on 127.0.0.1-3 in two datacenters (dc1: nodes 1 and 2, dc2: node
3) for replica, node-failure and datacenter tests; beside the
one node, a second independent one-node cluster on 127.0.0.2 can run (two clusters).

Modules, one concept each:

* ``jars``      - fetch the jars with Maven into ``~/.cache/cdcgen`` (once);
* ``topology``  - addresses, ports and directories of each node;
* ``config``    - cassandra.yaml and logback.xml per node;
* ``launcher``  - Java checks and the JVM command line; detached start;
* ``process``   - pid files, liveness, orderly stop;
* ``ports``     - "port already taken" checks;
* ``readiness`` - wait for CQL and for peers to see each other;
* ``client``    - cassandra-driver ``Cluster`` for sandbox nodes;
* ``cluster``   - :class:`Sandbox` and the all-topology ``down``/``status``;
* ``sharing``   - :class:`SandboxUser`: pid leases so concurrent test sessions
  never stop a topology another one is using.
"""

from __future__ import annotations

from cdcgen_dev.cassandra.client import open_cluster
from cdcgen_dev.cassandra.cluster import (
    NodeStatus,
    Sandbox,
    UpResult,
    down_all,
    running_topology,
    status_report,
)
from cdcgen_dev.cassandra.errors import SandboxError
from cdcgen_dev.cassandra.jars import CASSANDRA_VERSION, ensure_jars
from cdcgen_dev.cassandra.sharing import SandboxUser, claim_for_user

__all__ = [
    "CASSANDRA_VERSION",
    "NodeStatus",
    "Sandbox",
    "SandboxError",
    "SandboxUser",
    "UpResult",
    "claim_for_user",
    "down_all",
    "ensure_jars",
    "open_cluster",
    "running_topology",
    "status_report",
]
