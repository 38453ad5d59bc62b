"""The ``sandbox`` clock source: the clocks of the emulator's simulated nodes.

Each simulated node's clock is its Cassandra host's real clock plus the node's configured
skew; a node marked down, or whose host does not answer (a stopped process on the
three-node sandbox), reports an error. Plugged into the pipeline as the ``sandbox`` clock
source through the entry point group ``cdcgen.clock_readers``.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING

from cdcgen.adapters.clock_reader import DEFAULT_TIMEOUT_SECONDS, cluster_hosts, read_host_clock
from cdcgen.core.clocks import NodeClock
from cdcgen.schema import SourceSchema

if TYPE_CHECKING:
    from cdcgen.adapters.cql import CqlClient
    from cdcgen.config import PipelineConfig


class SandboxClockReader:
    """Clocks of the emulator's simulated nodes: host clock + skew, down nodes unreadable."""

    def __init__(
        self,
        client: CqlClient,
        source: PipelineConfig | SourceSchema,
        timeout: float = DEFAULT_TIMEOUT_SECONDS,
    ) -> None:
        """``source``: the pipeline's configuration (how the product builds it) or directly
        the emulator's schema (how the harness does)."""
        self.client = client
        self.schema = source if isinstance(source, SourceSchema) else source.source_schema
        self.timeout = timeout

    def read_clocks(self) -> list[NodeClock]:
        from cassandra import InvalidRequest

        from cdcgen_dev.emulator.state import load_nodes

        try:
            nodes = load_nodes(self.client, self.schema)
        except InvalidRequest as exc:
            return [NodeClock("sandbox", None, f"the sandbox is not set up: {exc}")]
        if not nodes:
            return [NodeClock("sandbox", None, "the sandbox has no nodes: run join-node first")]
        hosts = {str(h.address): h for h in cluster_hosts(self.client)}
        host_clocks: dict[str, tuple[datetime | None, str | None]] = {}
        result = []
        for node in nodes:
            if not node.up:
                result.append(NodeClock(node.name, None, f"node {node.name} is down (sandbox)"))
                continue
            if node.address not in host_clocks:
                host = hosts.get(node.address)
                host_clocks[node.address] = (
                    read_host_clock(self.client, host, self.timeout)
                    if host is not None
                    else (None, f"no CQL host at {node.address}")
                )
            clock, error = host_clocks[node.address]
            if clock is None:
                result.append(NodeClock(node.name, None, f"node {node.name}: {error}"))
            else:
                result.append(NodeClock(node.name, clock + node.clock_skew))
        return result
