"""Read every node's clock: a generation is closed only when all of them passed T_next + L.

ScyllaDB's user documentation tells consumers to run ``SELECT totimestamp(now()) FROM
system.local`` on *each* node before the last read of an old generation (design doc
section 4). That query must go to one specific host, so each is sent with
``Session.execute(..., host=host)`` (the driver then uses no other host). A node that
cannot answer is reported with its error, never skipped: an unreadable clock means the
generation cannot be declared closed.

* :class:`CqlClockReader`: every host the driver knows (a real cluster);
* another clock source (``CDCGEN_CLOCK_SOURCE``) is a plugin: a simulated cluster
  lends its simulated nodes' clocks that way (:mod:`cdcgen.extensions`).
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from cdcgen.adapters.errors import is_transient
from cdcgen.core.clocks import NodeClock
from cdcgen.core.time import naive_as_utc
from cdcgen.extensions import CLOCK_READERS, CQL_CLOCKS, clock_sources, registered
from cdcgen.ports import ClockReader

if TYPE_CHECKING:
    from cassandra.pool import Host

    from cdcgen.adapters.cql import CqlClient
    from cdcgen.config import PipelineConfig

CLOCK_QUERY = "SELECT totimestamp(now()) FROM system.local"
DEFAULT_TIMEOUT_SECONDS = 3.0


def read_host_clock(
    client: CqlClient, host: Host, timeout: float
) -> tuple[datetime | None, str | None]:
    """``(clock, None)`` from this one host, or ``(None, why not)``."""
    from cassandra import ConsistencyLevel
    from cassandra.query import SimpleStatement

    if host.is_up is False:
        return None, f"host {host.address} is down (driver)"
    statement = SimpleStatement(CLOCK_QUERY, consistency_level=ConsistencyLevel.ONE)
    try:
        rows = list(client.session.execute(statement, host=host, timeout=timeout))
    except Exception as exc:
        if not is_transient(exc):
            raise
        return None, f"host {host.address} did not answer: {type(exc).__name__}: {exc}"
    if not rows or rows[0][0] is None:
        return None, f"host {host.address} returned no clock"
    value: datetime = rows[0][0]
    return naive_as_utc(value), None


def cluster_hosts(client: CqlClient) -> list[Host]:
    return sorted(client.cluster.metadata.all_hosts(), key=lambda h: str(h.address))


class CqlClockReader:
    """Asks every host of the cluster for its clock, one routed query per host."""

    def __init__(self, client: CqlClient, timeout: float = DEFAULT_TIMEOUT_SECONDS) -> None:
        self.client = client
        self.timeout = timeout

    def read_clocks(self) -> list[NodeClock]:
        hosts = cluster_hosts(self.client)
        if not hosts:
            return [NodeClock("cluster", None, "the driver knows no host")]
        result = []
        for host in hosts:
            clock, error = read_host_clock(self.client, host, self.timeout)
            result.append(NodeClock(str(host.address), clock, error))
        return result


def clock_skews(clocks: Iterable[NodeClock], reference: datetime) -> dict[str, timedelta | None]:
    """Each node's offset from ``reference`` (None where the clock could not be read)."""
    return {c.node: (c.clock - reference if c.clock is not None else None) for c in clocks}


def clock_reader_for(client: CqlClient, config: PipelineConfig) -> ClockReader:
    """``cql``: ask the cluster's hosts; any other source is the plugin registered under
    its name (:mod:`cdcgen.extensions`), built as ``Reader(client, config)``."""
    if config.clock_source == CQL_CLOCKS:
        return CqlClockReader(client)
    plugin = registered(CLOCK_READERS).get(config.clock_source)
    if plugin is None:
        raise ValueError(f"no clock source {config.clock_source!r}; known: {clock_sources()}")
    reader: ClockReader = plugin.load()(client, config)
    return reader


class ClockReaderOnDemand:
    """:func:`clock_reader_for`, built at the first reading: a run that never reads the
    clocks (an apply; only a bootstrap's snapshot does) neither loads a clock plugin nor
    meets a clock source it cannot use."""

    def __init__(self, client: CqlClient, config: PipelineConfig) -> None:
        self._client = client
        self._config = config
        self._reader: ClockReader | None = None

    def read_clocks(self) -> list[NodeClock]:
        if self._reader is None:
            self._reader = clock_reader_for(self._client, self._config)
        return self._reader.read_clocks()


__all__ = [
    "CLOCK_QUERY",
    "ClockReaderOnDemand",
    "CqlClockReader",
    "clock_reader_for",
    "clock_skews",
    "cluster_hosts",
    "read_host_clock",
]
