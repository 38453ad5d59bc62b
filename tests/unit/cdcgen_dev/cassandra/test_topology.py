"""Where each sandbox node stands (cdcgen_dev.cassandra.topology, the files config writes
for it, and the check that its data was made there): the three-node cluster is two
datacenters, the one-node topologies the one they always were."""

from __future__ import annotations

from pathlib import Path

from cdcgen_dev.cassandra.cluster import placement_moved
from cdcgen_dev.cassandra.config import cassandra_settings, write_node_config
from cdcgen_dev.cassandra.topology import topology


def test_the_cluster_is_two_datacenters_and_a_single_node_stays_in_datacenter1(
    tmp_path: Path,
) -> None:
    cluster = topology("cluster", tmp_path)
    assert [(n.address, n.datacenter) for n in cluster.nodes] == [
        ("127.0.0.1", "dc1"),
        ("127.0.0.2", "dc1"),
        ("127.0.0.3", "dc2"),
    ]
    assert cluster.node(4).datacenter == "dc1"  # a node added later joins the first
    for name in ("single", "second"):
        (node,) = topology(name, tmp_path).nodes
        assert (node.datacenter, node.rack) == ("datacenter1", "rack1")  # SimpleSnitch's


def test_each_node_reads_its_place_from_its_own_rackdc_file(tmp_path: Path) -> None:
    cluster = topology("cluster", tmp_path)
    for node in cluster.nodes:
        assert cassandra_settings(node, cluster)["endpoint_snitch"] == (
            "GossipingPropertyFileSnitch"
        )
        write_node_config(node, cluster)
        lines = node.rackdc_path.read_text().splitlines()
        assert f"dc={node.datacenter}" in lines and "rack=rack1" in lines
        # On the classpath first: the snitch finds the file there.
        assert node.rackdc_path.parent == node.conf_dir


def test_data_made_in_another_datacenter_is_found(tmp_path: Path) -> None:
    """Cassandra refuses to start a node whose datacenter changed under its data: such
    data (without a placement file it was made under SimpleSnitch, in datacenter1) is
    what the sandbox deletes before it starts the topology."""
    cluster, single = topology("cluster", tmp_path), topology("single", tmp_path)
    node1, node3 = cluster.node(1), cluster.node(3)
    (alone,) = single.nodes
    for node in (node1, node3, alone):
        assert not placement_moved(node)  # no data yet
        (node.data_dir / "system").mkdir(parents=True)
    assert placement_moved(node1) and placement_moved(node3)  # datacenter1 before
    assert not placement_moved(alone)  # still in datacenter1
    for node in (node1, node3):
        write_node_config(node, cluster)
        assert not placement_moved(node)
    node3.placement_file.write_text("dc1 rack1\n")
    assert placement_moved(node3)
