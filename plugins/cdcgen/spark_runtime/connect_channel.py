"""How a job's session presents the token to the Spark Connect server.

The server (Spark 4.1's pre-shared-key interceptor) wants ``authorization: Bearer
<token>`` on every call and speaks no TLS itself. PySpark's client sends a token only
over TLS, except to a host spelt ``localhost``: to ``127.0.0.1`` (the harness's
address) or to a server on a private network (docker-compose's ``spark-connect``) it
would start a TLS handshake the server cannot answer. So the token goes as that header
on a plain channel where a plain channel is safe to use: a loopback address, or a URL
that says ``use_ssl=false`` (the deployment vouching for its network). Any other host
must say ``use_ssl=true`` (TLS in front of the server: PySpark's own path); saying
nothing there is refused rather than guessed, since a guess either fails the handshake
or sends the token in clear over a network nobody vouched for.

The token is never put into the URL: URLs end up in logs, and the client keeps it in
its parameters only.
"""

from __future__ import annotations

import ipaddress
from typing import TYPE_CHECKING

from pydantic import SecretStr

from cdcgen.errors import ConfigError
from cdcgen.spark_runtime.connect_settings import REMOTE_ENV, TOKEN_ENV

if TYPE_CHECKING:
    from pyspark.sql.connect.client import DefaultChannelBuilder

#: The URL parameter PySpark reads for TLS; "false" spelt out is the deployment's word.
USE_SSL = "use_ssl"
#: The header Spark's ``PreSharedKeyAuthenticationInterceptor`` reads.
AUTHORIZATION = "authorization"


def is_loopback(host: str) -> bool:
    """True for ``localhost`` and loopback addresses (``127.0.0.0/8``, ``::1``)."""
    bare = host.strip("[]")
    if bare == "localhost":
        return True
    try:
        return ipaddress.ip_address(bare).is_loopback
    except ValueError:
        return False


def channel_builder(url: str, token: SecretStr | None) -> DefaultChannelBuilder:
    """PySpark's channel to ``url``, carrying ``token`` as described above.

    Refused by name (:class:`ConfigError`, the URL and token not echoed): a URL with a
    token of its own, and a token bound for a non-loopback host without ``use_ssl``.
    """
    from pyspark.errors import PySparkValueError
    from pyspark.sql.connect.client import ChannelBuilder, DefaultChannelBuilder

    try:
        builder = DefaultChannelBuilder(url)
    except PySparkValueError:
        raise ConfigError(
            f"{REMOTE_ENV}: not a Spark Connect URL (expected sc://host:port)"
        ) from None
    if builder.getDefault(ChannelBuilder.PARAM_TOKEN, None) is not None:
        raise ConfigError(
            f"{REMOTE_ENV}: the URL holds a token; give it as {TOKEN_ENV} instead "
            "(a URL is logged, a token must not be)"
        )
    if token is None:
        return builder
    if builder.use_ssl:
        builder.set(ChannelBuilder.PARAM_TOKEN, token.get_secret_value())
        return builder
    said_plain = builder.getDefault(USE_SSL, "").lower() == "false"
    if not (said_plain or is_loopback(builder.host)):
        raise ConfigError(
            f"{REMOTE_ENV}: the token would go to {builder.host}, not a loopback address: "
            f"add ;{USE_SSL}=true to the URL (TLS in front of the server) or "
            f";{USE_SSL}=false (a private network between the jobs and the server)"
        )
    # Not PySpark's token parameter: with it PySpark would insist on TLS. A parameter
    # PySpark does not know becomes a header of every call, this one included.
    builder.set(AUTHORIZATION, f"Bearer {token.get_secret_value()}")
    return builder
