"""Which failures of the cluster are worth another attempt: the one definition.

Split like dlt splits destination errors: *transient* ones (timeouts, unavailable
replicas, overload, a node bootstrapping, lost connections, no node answering) may not
happen again, so callers retry them with backoff or report the node as unreadable and
keep polling; everything else (an invalid query, a missing table, no permission, a bug)
is *terminal* and fails at once, because retrying cannot fix it. A connection attempt
every node refused for its credentials or certificate is terminal too.

ScyllaDB's per-partition rate limit (the ``per_partition_rate_limit`` table option)
rejects reads of a hot partition with ``RATE_LIMIT_ERROR`` only to drivers that
negotiated its protocol extension; cassandra-driver does not, so ScyllaDB sends it as
a CONFIG_ERROR (``transport/server.cc``, ``make_rate_limit_error``), which the driver
raises as ``ConfigurationException``. That one is transient: the limit refills.
"""

from __future__ import annotations

#: How ScyllaDB's ``rate_limit_exception`` message starts (``exceptions/exceptions.cc``).
RATE_LIMITED = "Per-partition rate limit reached"


class ConnectionFailed(Exception):
    """Transient: no node of the cluster answered."""


def is_transient(exc: BaseException) -> bool:
    """True for failures a later attempt may not meet (see the module doc)."""
    from cassandra import (
        AuthenticationFailed,
        CoordinationFailure,
        OperationTimedOut,
        Timeout,
        Unavailable,
    )
    from cassandra.cluster import NoHostAvailable
    from cassandra.connection import ConnectionException
    from cassandra.protocol import (
        ConfigurationException,
        IsBootstrappingErrorMessage,
        OverloadedErrorMessage,
        ServerError,
    )

    if isinstance(exc, ConfigurationException):
        return str(getattr(exc, "message", exc)).startswith(RATE_LIMITED)
    if isinstance(exc, NoHostAvailable):
        causes = list((getattr(exc, "errors", None) or {}).values())
        refused = (AuthenticationFailed, PermissionError)
        return not causes or not all(isinstance(cause, refused) for cause in causes)
    transient = (
        ConnectionFailed,
        Timeout,
        Unavailable,
        CoordinationFailure,
        OperationTimedOut,
        ConnectionException,
        OverloadedErrorMessage,
        IsBootstrappingErrorMessage,
        ServerError,
        ConnectionError,
        TimeoutError,
    )
    return isinstance(exc, transient)
