"""cassandra-driver connections to sandbox nodes.

``cassandra.cluster`` is imported inside functions: DAG-facing modules must not
pay for it at import time (ruff TID253).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING

from cdcgen_dev.cassandra.topology import NATIVE_PORT

if TYPE_CHECKING:
    from cassandra.cluster import Cluster


def open_cluster(
    contact_points: Sequence[str],
    *,
    port: int = NATIVE_PORT,
    only_these_hosts: bool = False,
    connect_timeout: float = 5.0,
    request_timeout: float = 10.0,
) -> Cluster:
    """A driver ``Cluster`` for the sandbox (not yet connected).

    ``only_these_hosts`` pins every request to the given addresses - used to ask
    one particular node, e.g. during readiness checks. Otherwise every node is alike,
    whatever its datacenter: the three-node cluster is two datacenters, and a
    datacenter-aware policy would guess the contact point's and never connect to the
    other's node, which readiness and the tests ask by name (``host=``).
    """
    from cassandra.cluster import EXEC_PROFILE_DEFAULT, Cluster, ExecutionProfile
    from cassandra.policies import (
        ConstantReconnectionPolicy,
        RoundRobinPolicy,
        TokenAwarePolicy,
        WhiteListRoundRobinPolicy,
    )

    policy = (
        WhiteListRoundRobinPolicy(list(contact_points))
        if only_these_hosts
        else TokenAwarePolicy(RoundRobinPolicy())
    )
    profile = ExecutionProfile(load_balancing_policy=policy, request_timeout=request_timeout)
    return Cluster(
        contact_points=list(contact_points),
        port=port,
        execution_profiles={EXEC_PROFILE_DEFAULT: profile},
        connect_timeout=connect_timeout,
        # Nodes are stopped and restarted in tests; the default exponential
        # back-off would leave a restarted node unused for minutes.
        reconnection_policy=ConstantReconnectionPolicy(delay=1.0, max_attempts=None),
    )


@contextmanager
def quiet_driver_logs() -> Iterator[None]:
    """Silence the driver's WARNINGs about refused connections while nodes start."""
    loggers = [
        logging.getLogger(name)
        for name in ("cassandra.cluster", "cassandra.connection", "cassandra.pool")
    ]
    levels = [logger.level for logger in loggers]
    for logger in loggers:
        logger.setLevel(logging.CRITICAL)
    try:
        yield
    finally:
        for logger, level in zip(loggers, levels, strict=True):
            logger.setLevel(level)
