"""Which failures of the cluster are worth another attempt: the one definition.

Split like dlt splits destination errors: *transient* ones (timeouts, unavailable
replicas, overload, a node bootstrapping, lost connections, no node answering) may not
happen again, so callers retry them with backoff or report the node as unreadable and
keep polling; everything else (an invalid query, a missing table, no permission, a bug)
is *terminal* and fails at once, because retrying cannot fix it. A connection attempt
every node refused for its credentials or certificate is terminal too.
"""

from __future__ import annotations


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
        IsBootstrappingErrorMessage,
        OverloadedErrorMessage,
        ServerError,
    )

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
