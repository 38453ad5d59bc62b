"""Which failures of the cluster are worth another attempt: the one definition.

Split like dlt splits destination errors: *transient* ones (timeouts, unavailable
replicas, overload, a node bootstrapping, lost connections, no node answering) may not
happen again, so callers retry them with backoff or report the node as unreadable and
keep polling; everything else (an invalid query, a missing table, no permission, a bug)
is *terminal* and fails at once, because retrying cannot fix it. A connection attempt
every node refused for its credentials or certificate is terminal too
(:class:`AccessRefused`).

ScyllaDB's per-partition rate limit (the ``per_partition_rate_limit`` table option)
rejects reads of a hot partition with ``RATE_LIMIT_ERROR`` only to drivers that
negotiated its protocol extension; cassandra-driver does not, so ScyllaDB sends it as
a CONFIG_ERROR (``transport/server.cc``, ``make_rate_limit_error``), which the driver
raises as ``ConfigurationException``. That one is transient: the limit refills.
"""

from __future__ import annotations

from typing import Any

from cdcgen.core.errors import CdcgenError, ExitCode, TerminalError, TransientError

#: How ScyllaDB's ``rate_limit_exception`` message starts (``exceptions/exceptions.cc``).
RATE_LIMITED = "Per-partition rate limit reached"


class ConnectionFailed(TransientError):
    """Transient: no node of the cluster answered."""


class SinkClockUnreadable(TransientError):
    """Transient: no node of the sink answered with its clock."""


class AccessRefused(TerminalError):
    """Terminal: the nodes refused our credentials or we refused their certificate.

    Another attempt meets the same answer, so nothing retries it or polls on: the
    message names each host and its reason, once.
    """

    summary = "cluster refused access"
    next_step = (
        "every task on this cluster fails the same way until it connects: correct the "
        "connection's login and password or its TLS extras (or the CDCGEN_USERNAME, "
        "CDCGEN_PASSWORD_FILE and CDCGEN_TLS_* settings; docs/connecting.md), then clear "
        "the task"
    )


class ReplicasUnavailable(TransientError):
    """Too few replicas alive for the consistency level, once a call's own retries are
    spent; the message names the level, the counts and the nodes the driver sees down.
    Transient for the task: its retry, minutes later, may find the nodes back."""


def hosts_down(cluster: Any) -> list[str]:
    """Addresses of the nodes a driver ``Cluster`` currently sees down."""
    hosts = cluster.metadata.all_hosts()
    return sorted(str(host.endpoint.address) for host in hosts if not host.is_up)


def unavailable(exc: BaseException, hosts_down: list[str]) -> ReplicasUnavailable | None:
    """The :class:`ReplicasUnavailable` an ``Unavailable`` answer means, else None."""
    from cassandra import ConsistencyLevel, Unavailable

    # The driver tries the next host on Unavailable: with one host left it reports
    # NoHostAvailable holding each host's answer.
    answers = list((getattr(exc, "errors", None) or {}).values())
    exc = next((a for a in answers if isinstance(a, Unavailable)), exc)
    if not isinstance(exc, Unavailable):
        return None
    level = ConsistencyLevel.value_to_name.get(exc.consistency or -1, str(exc.consistency))
    down = ", ".join(sorted(hosts_down)) or "none yet seen by the driver"
    return ReplicasUnavailable(
        f"{level} needs {exc.required_replicas} replica(s), {exc.alive_replicas} alive; "
        f"nodes down: {down}"
    )


def refusal(cause: BaseException) -> str | None:
    """Why a node refused the connection for its credentials or TLS, or None.

    The driver reports a failed TLS handshake as a plain ``OSError`` whose text carries
    the ``ssl`` reason ("[SSL: CERTIFICATE_VERIFY_FAILED] ..."), hence the text test.
    """
    import ssl

    from cassandra import AuthenticationFailed

    # First: the driver re-raises a handshake failure as OSError(errno 1), which Python
    # turns into a PermissionError.
    if isinstance(cause, ssl.SSLError) or (isinstance(cause, OSError) and "[SSL" in str(cause)):
        return f"TLS handshake failed ({cause})"
    if isinstance(cause, AuthenticationFailed | PermissionError):
        return f"authentication refused ({cause})"
    return None


def refusals(exc: BaseException) -> list[str]:
    """Each host's refusal in a ``NoHostAvailable`` in which every host refused, else []."""
    causes = dict(getattr(exc, "errors", None) or {})
    reasons = [f"{host}: {why}" for host, cause in causes.items() if (why := refusal(cause))]
    return reasons if causes and len(reasons) == len(causes) else []


def is_transient(exc: BaseException) -> bool:
    """True for failures a later attempt may not meet (see the module doc): the package's
    own errors by their kind, the driver's by the list below; anything else (a bug) is
    not retried by the calls that retry a statement."""
    from cassandra import (
        AuthenticationFailed,
        CoordinationFailure,
        OperationTimedOut,
        Timeout,
        Unavailable,
    )
    from cassandra.cluster import NoConnectionsAvailable, NoHostAvailable
    from cassandra.connection import ConnectionException
    from cassandra.protocol import (
        ConfigurationException,
        IsBootstrappingErrorMessage,
        OverloadedErrorMessage,
        ServerError,
    )

    if isinstance(exc, CdcgenError):
        return isinstance(exc, TransientError)
    if isinstance(exc, ConfigurationException):
        return str(getattr(exc, "message", exc)).startswith(RATE_LIMITED)
    if isinstance(exc, NoHostAvailable):
        return not refusals(exc)
    if isinstance(exc, AccessRefused | AuthenticationFailed):
        return False
    transient = (
        ConnectionFailed,
        NoConnectionsAvailable,
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


def is_terminal(exc: BaseException) -> bool:
    """Whether a task fails at once on ``exc`` rather than being retried: the one rule.

    The package's errors say it by their kind (:mod:`cdcgen.core.errors`), the driver's by
    :func:`is_transient` (an invalid query, a missing table, a refused login are
    terminal). Anything else, a library's own failure or a bug, is left to the task's
    retries, as Airflow does: nothing says that it is terminal, and a failure that was in
    fact transient should not fail the run.
    """
    if isinstance(exc, CdcgenError):
        return isinstance(exc, TerminalError)
    if type(exc).__module__.split(".", 1)[0] == "cassandra":
        return not is_transient(exc)
    return False


def exit_code(exc: BaseException) -> ExitCode:
    """The exit status of a job or command that ends on ``exc``."""
    return ExitCode.TERMINAL if is_terminal(exc) else ExitCode.TRANSIENT


class DeltaLogError(TerminalError):
    """Terminal: a table's log does not hold what a write or a reader expects."""


class PublishError(TerminalError):
    """A generation the target cannot take as it is (no rows, a range end twice); the
    base of publication failures."""


class PublishConflict(PublishError):
    """Terminal: the target already holds different streams for this generation."""


class StreamReadError(CdcgenError):
    """A stream window could not be read; the message names the stream and window."""


class TransientReadError(TransientError, StreamReadError):
    """Still failing after every retry; a later attempt (task retry, DAG retry) may work."""


class TerminalReadError(TerminalError, StreamReadError):
    """Retrying cannot help (bad query, missing table, no permission)."""


class RoutingError(TerminalError):
    """The partitioner of a log table could not be determined."""
