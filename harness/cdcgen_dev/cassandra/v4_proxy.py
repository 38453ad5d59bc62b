"""A CQL endpoint that speaks protocol v4 only, the way ScyllaDB does, in front of Cassandra.

The sandbox's Cassandra 5 serves v5, which ScyllaDB does not: a pipeline that only ever
met Cassandra could depend on v5 without anyone noticing. This proxy listens on a
loopback port and, like ScyllaDB's CQL server, reads the first byte of each connection:
a version other than 3 or 4 is answered with ScyllaDB's own protocol error
(:func:`~cdcgen_dev.cassandra.v4_frames.unsupported_version_error`) and the connection
is closed, *before* any connection to Cassandra is opened, so nothing reaches Cassandra
on another version. v4 (and v3) connections are forwarded to Cassandra byte for byte,
frame by frame in both directions; every frame is counted (:class:`ProxyStats`), which
is how tests prove a run really spoke v4, paged and used prepared statements.

:class:`Delay` holds back the responses to chosen requests (a statement matching some
text) past a client's request timeout, as a slow replica would; responses to other
requests on the same connection still flow (CQL matches responses by stream id).

Peers: the proxy stands for one node. cassandra-driver learns other nodes from
``system.peers`` and would connect to their real addresses, around the proxy; it is
meant for a single-node Cassandra (whose ``system.peers`` is empty), and
:meth:`V4Proxy.check_single_node` refuses anything else rather than let traffic bypass it.

Run by hand: ``python -m cdcgen_dev.cassandra.v4_proxy --listen 127.0.0.1:19042``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import threading
from collections import Counter
from dataclasses import dataclass, field, replace

from cdcgen_dev.cassandra import v4_frames as f


@dataclass
class Delay:
    """Hold back the responses to the first ``count`` QUERY/EXECUTE requests whose
    statement contains ``statement_contains`` by ``seconds``."""

    statement_contains: str
    seconds: float
    count: int = 1


@dataclass
class ProxyStats:
    """What went through the proxy since it started (or was reset)."""

    connections: int = 0
    #: Connections refused, by the protocol version they opened with.
    refused: Counter[int] = field(default_factory=Counter)
    #: Connections opened to Cassandra (only after the version check passed).
    upstream_connections: int = 0
    #: Frames forwarded to Cassandra, by (protocol version, opcode name).
    requests: Counter[tuple[int, str]] = field(default_factory=Counter)
    #: Frames returned to clients, by (protocol version, opcode name).
    responses: Counter[tuple[int, str]] = field(default_factory=Counter)
    #: QUERY/EXECUTE requests that carried a paging state (a second or later page).
    paged_requests: int = 0
    #: Rows results that said more pages follow.
    partial_pages: int = 0
    #: EXECUTE requests of a statement prepared through the proxy.
    executes: int = 0
    delayed: int = 0

    def copy(self) -> ProxyStats:
        return replace(
            self,
            refused=Counter(self.refused),
            requests=Counter(self.requests),
            responses=Counter(self.responses),
        )

    @property
    def request_versions(self) -> set[int]:
        return {version for version, _ in self.requests}

    def count(self, opcode: str) -> int:
        return sum(n for (_, name), n in self.requests.items() if name == opcode)


@dataclass(frozen=True)
class Pending:
    """A request awaiting its response on one connection (keyed by stream id)."""

    opcode: int
    statement: str = ""  # of a PREPARE: the prepared id in its answer maps to it
    delay: float | None = None


class V4Proxy:
    """The proxy, on its own event loop in a daemon thread; a context manager."""

    def __init__(
        self,
        upstream: tuple[str, int] = ("127.0.0.1", 9042),
        listen: tuple[str, int] = ("127.0.0.1", 0),
        versions: frozenset[int] = f.SCYLLA_VERSIONS,
    ) -> None:
        self.upstream = upstream
        self.host, self.port = listen
        self.versions = versions
        self._stats = ProxyStats()
        self._lock = threading.Lock()
        self._delays: list[Delay] = []
        self._prepared: dict[bytes, str] = {}  # prepared id -> statement text
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._server: asyncio.Server | None = None
        self._writers: set[asyncio.StreamWriter] = set()  # open sockets, both sides

    # --- control (any thread) ---------------------------------------------------------

    def start(self) -> V4Proxy:
        self._thread.start()
        future = asyncio.run_coroutine_threadsafe(self._listen(), self._loop)
        self.port = future.result(timeout=10)
        return self

    def stop(self) -> None:
        async def close() -> None:
            if self._server is not None:
                self._server.close()
            for writer in list(self._writers):
                writer.close()

        if self._thread.is_alive():
            asyncio.run_coroutine_threadsafe(close(), self._loop).result(timeout=10)
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(timeout=10)
        self._loop.close()

    def __enter__(self) -> V4Proxy:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def stats(self) -> ProxyStats:
        with self._lock:
            return self._stats.copy()

    def reset(self) -> None:
        with self._lock:
            self._stats = ProxyStats()

    def delay(self, rule: Delay) -> None:
        with self._lock:
            self._delays.append(rule)

    def check_single_node(self) -> None:
        """Raise unless the node behind the proxy has no peers (see the module doc)."""
        from cassandra.cluster import Cluster

        cluster = Cluster([self.host], port=self.port, protocol_version=4)
        try:
            session = cluster.connect()
            peers = list(session.execute("SELECT peer FROM system.peers"))
            hosts = {str(h.endpoint) for h in cluster.metadata.all_hosts()}
        finally:
            cluster.shutdown()
        if peers or hosts != {f"{self.host}:{self.port}"}:
            raise RuntimeError(
                f"the v4 proxy stands for one node, but {self.upstream} has peers "
                f"{[p[0] for p in peers]}: the driver would reach them around the proxy"
            )

    # --- the event loop ---------------------------------------------------------------

    async def _listen(self) -> int:
        self._server = await asyncio.start_server(self._accept, self.host, self.port)
        port: int = self._server.sockets[0].getsockname()[1]
        return port

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with self._lock:
            self._stats.connections += 1
        try:
            first = await reader.readexactly(1)
        except asyncio.IncompleteReadError:
            writer.close()
            return
        version = first[0]
        if version not in self.versions:
            # As ScyllaDB: answer on stream 0 at v4, then close; Cassandra never sees it.
            with self._lock:
                self._stats.refused[version] += 1
            writer.write(f.unsupported_version_error(version))
            with contextlib.suppress(ConnectionError):
                await writer.drain()
            writer.close()
            return
        try:
            up_reader, up_writer = await asyncio.open_connection(*self.upstream)
        except OSError:
            writer.close()
            return
        with self._lock:
            self._stats.upstream_connections += 1
        self._writers.update((writer, up_writer))
        pending: dict[int, Pending] = {}
        upward = asyncio.ensure_future(
            self._client_to_server(first, version, reader, writer, up_writer, pending)
        )
        downward = asyncio.ensure_future(self._server_to_client(up_reader, writer, pending))
        done, _ = await asyncio.wait([upward, downward], return_when=asyncio.FIRST_COMPLETED)
        for task in (upward, downward):
            task.cancel()
        for task in done:  # a reset connection or a bad frame ends this one connection
            if not task.cancelled():
                task.exception()
        for w in (writer, up_writer):
            self._writers.discard(w)
            w.close()

    async def _client_to_server(
        self,
        first: bytes,
        version: int,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        upstream: asyncio.StreamWriter,
        pending: dict[int, Pending],
    ) -> None:
        head = first + await _read(reader, f.HEADER_SIZE - 1)
        while head:
            header = f.parse_header(head)
            if header.version != version:
                writer.write(f.mixed_version_error(header.version, version))
                await writer.drain()
                return
            body = await _read(reader, header.length)
            pending[header.stream] = self._on_request(header, body)
            upstream.write(head + body)
            await upstream.drain()
            head = await _read(reader, f.HEADER_SIZE, eof_ok=True)

    async def _server_to_client(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        pending: dict[int, Pending],
    ) -> None:
        while head := await _read(reader, f.HEADER_SIZE, eof_ok=True):
            header = f.parse_header(head)
            body = await _read(reader, header.length)
            request = pending.pop(header.stream, Pending(-1))
            self._on_response(header, body, request)
            delay = request.delay
            if delay is None:
                writer.write(head + body)
            else:  # a slow replica: this answer only, later; the others keep flowing
                self._loop.call_later(delay, _write_if_open, writer, head + body)

    def _on_request(self, header: f.Header, body: bytes) -> Pending:
        """Count a request; what its response needs (the delay it gets, if a
        :class:`Delay` matches)."""
        with self._lock:
            s = self._stats
            s.requests[(header.version, header.opcode_name)] += 1
            if header.compressed or header.opcode not in (f.QUERY, f.EXECUTE, f.PREPARE):
                return Pending(header.opcode)
            if header.opcode == f.PREPARE:
                return Pending(header.opcode, statement=f.query_text(body))
            if header.opcode == f.QUERY:
                text = f.query_text(body)
            else:
                s.executes += 1
                text = self._prepared.get(f.prepared_id_of_execute(body), "")
            if f.query_flags(header.opcode, body) & f.PAGING_STATE_FLAG:
                s.paged_requests += 1
            for rule in self._delays:
                if rule.count > 0 and rule.statement_contains in text:
                    rule.count -= 1
                    s.delayed += 1
                    return Pending(header.opcode, delay=rule.seconds)
            return Pending(header.opcode)

    def _on_response(self, header: f.Header, body: bytes, request: Pending) -> None:
        with self._lock:
            self._stats.responses[(header.version, header.opcode_name)] += 1
            if header.opcode != f.RESULT or header.compressed:
                return
            kind = f.result_kind(body)
            if kind == f.PREPARED_KIND and request.opcode == f.PREPARE:
                self._prepared[f.prepared_id_of_result(body)] = request.statement
            elif f.rows_have_more_pages(body):
                self._stats.partial_pages += 1


async def _read(reader: asyncio.StreamReader, size: int, *, eof_ok: bool = False) -> bytes:
    try:
        return await reader.readexactly(size) if size else b""
    except asyncio.IncompleteReadError as exc:
        if eof_ok and not exc.partial:
            return b""
        raise


def _write_if_open(writer: asyncio.StreamWriter, data: bytes) -> None:
    if not writer.is_closing():
        writer.write(data)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--listen", default="127.0.0.1:19042", help="host:port to listen on")
    parser.add_argument("--upstream", default="127.0.0.1:9042", help="Cassandra's host:port")
    args = parser.parse_args(argv)
    lhost, lport = args.listen.rsplit(":", 1)
    uhost, uport = args.upstream.rsplit(":", 1)
    proxy = V4Proxy((uhost, int(uport)), (lhost, int(lport))).start()
    print(f"v4-only CQL endpoint on {proxy.host}:{proxy.port} -> {uhost}:{uport}", flush=True)
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        pass
    finally:
        proxy.stop()
        print(proxy.stats(), flush=True)


if __name__ == "__main__":
    main()
