"""The v4-only proxy's framing: ScyllaDB's refusal byte for byte, and v4 frames read right.

Frames are built by cassandra-driver's own encoder and our refusal is decoded by its own
decoder, so what is checked is what the driver sends and understands. The proxy itself
runs here over loopback sockets against a small recording TCP server standing in for
Cassandra (the real Cassandra is in tests/integration/test_v4_proxy.py).
"""

from __future__ import annotations

import socket
import socketserver
import struct
import threading
from collections.abc import Iterator
from typing import ClassVar

import pytest
from cassandra import ConsistencyLevel
from cassandra.protocol import (
    ExecuteMessage,
    OptionsMessage,
    PrepareMessage,
    ProtocolException,
    ProtocolHandler,
    QueryMessage,
)

from cdcgen_dev.cassandra import v4_frames as f
from cdcgen_dev.cassandra.v4_proxy import V4Proxy

MESSAGE = b"Invalid or unsupported protocol version: 5"


def encode(message: object, version: int = 4, stream: int = 3) -> bytes:
    return bytes(ProtocolHandler.encode_message(message, stream, version, None, True))


def test_the_refusal_is_scyllas_bytes() -> None:
    # transport/server.cc: make_error(0, PROTOCOL_ERROR, "Invalid or unsupported protocol
    # version: 5") written at current_version 4: header 0x84 flags 0 stream 0 opcode 0.
    body = b"\x00\x00\x00\x0a" + struct.pack(">H", len(MESSAGE)) + MESSAGE
    expected = b"\x84\x00\x00\x00\x00" + struct.pack(">i", len(body)) + body
    assert f.unsupported_version_error(5) == expected


@pytest.mark.parametrize("version", [1, 2, 5, 6, 65, 66])
def test_the_driver_reads_the_refusal_as_an_unsupported_version(version: int) -> None:
    frame = f.unsupported_version_error(version)
    header = f.parse_header(frame[: f.HEADER_SIZE])
    assert (header.version, header.response, header.stream, header.opcode) == (4, True, 0, 0)
    decoded = ProtocolHandler.decode_message(
        header.version, {}, header.stream, header.flags, header.opcode,
        frame[f.HEADER_SIZE :], None, None,
    )  # fmt: skip
    assert isinstance(decoded, ProtocolException)
    # The words cassandra-driver looks for before it steps down a version.
    assert "unsupported protocol version" in decoded.message
    assert f.parse_error(frame[f.HEADER_SIZE :]) == (
        0x000A,
        f"Invalid or unsupported protocol version: {version}",
    )


def test_query_flags_and_statement_of_driver_frames() -> None:
    query = QueryMessage("SELECT * FROM t", ConsistencyLevel.ONE, fetch_size=7, paging_state=b"x")
    frame = encode(query)
    header = f.parse_header(frame[: f.HEADER_SIZE])
    body = frame[f.HEADER_SIZE :]
    assert (header.version, header.response, header.stream, header.opcode_name) == (
        4,
        False,
        3,
        "QUERY",
    )
    assert header.length == len(body)
    assert f.query_text(body) == "SELECT * FROM t"
    flags = f.query_flags(f.QUERY, body)
    assert flags & f.PAGE_SIZE_FLAG and flags & f.PAGING_STATE_FLAG

    execute = ExecuteMessage(b"\x01\x02", [], ConsistencyLevel.QUORUM, fetch_size=5)
    body = encode(execute)[f.HEADER_SIZE :]
    assert f.prepared_id_of_execute(body) == b"\x01\x02"
    assert not f.query_flags(f.EXECUTE, body) & f.PAGING_STATE_FLAG

    prepare = encode(PrepareMessage("SELECT a FROM b WHERE k = ?"))
    assert f.query_text(prepare[f.HEADER_SIZE :]) == "SELECT a FROM b WHERE k = ?"


def test_results() -> None:
    prepared = struct.pack(">iH", f.PREPARED_KIND, 2) + b"\xab\xcd" + b"rest"
    assert f.prepared_id_of_result(prepared) == b"\xab\xcd"
    assert f.rows_have_more_pages(struct.pack(">ii", f.ROWS_KIND, 0x0002 | 0x0001))
    assert not f.rows_have_more_pages(struct.pack(">ii", f.ROWS_KIND, 0x0001))
    with pytest.raises(f.FrameError):
        f.prepared_id_of_result(struct.pack(">ii", f.ROWS_KIND, 0))
    with pytest.raises(f.FrameError):
        f.parse_header(b"\x04\x00")


# --- the proxy over sockets -------------------------------------------------------------


class Recorder(socketserver.BaseRequestHandler):
    """Answers every request frame with a fixed RESULT on the same stream; records them."""

    received: ClassVar[list[bytes]] = []

    def handle(self) -> None:
        while head := _recv(self.request, f.HEADER_SIZE):
            header = f.parse_header(head)
            body = _recv(self.request, header.length)
            Recorder.received.append(head + body)
            reply = struct.pack(">i", 1)  # a Void result
            self.request.sendall(
                f.header_bytes(f.Header(4, True, 0, header.stream, f.RESULT, len(reply))) + reply
            )


def _recv(sock: socket.socket, size: int) -> bytes:
    data = b""
    while len(data) < size:
        chunk = sock.recv(size - len(data))
        if not chunk:
            return data
        data += chunk
    return data


@pytest.fixture
def proxy() -> Iterator[V4Proxy]:
    Recorder.received = []
    server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Recorder)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    with V4Proxy(upstream=server.server_address) as running:  # type: ignore[arg-type]
        yield running
    server.shutdown()
    server.server_close()


def test_a_v5_connection_is_refused_and_never_reaches_the_upstream(proxy: V4Proxy) -> None:
    with socket.create_connection((proxy.host, proxy.port), timeout=10) as sock:
        sock.sendall(encode(OptionsMessage(), version=5, stream=0))
        answer = _recv(sock, 1024)
        assert sock.recv(1) == b""  # closed after the error, as ScyllaDB does
    assert answer == f.unsupported_version_error(5)
    stats = proxy.stats()
    assert stats.refused == {5: 1} and stats.upstream_connections == 0
    assert Recorder.received == []


def test_v4_frames_go_through_byte_for_byte(proxy: V4Proxy) -> None:
    frames = [
        encode(OptionsMessage(), stream=0),
        encode(QueryMessage("SELECT 1", ConsistencyLevel.ONE, fetch_size=2), stream=1),
    ]
    with socket.create_connection((proxy.host, proxy.port), timeout=10) as sock:
        sock.sendall(b"".join(frames))  # two frames in one segment, split by the proxy
        answers = [_recv(sock, f.HEADER_SIZE + 4) for _ in frames]
        # A frame of another version on the same connection: ScyllaDB's parse_frame error.
        sock.sendall(encode(OptionsMessage(), version=3, stream=2))
        mixed = _recv(sock, 1024)
    assert Recorder.received == frames
    assert [f.parse_header(a[: f.HEADER_SIZE]).stream for a in answers] == [0, 1]
    assert f.parse_error(mixed[f.HEADER_SIZE :])[1] == (
        "Invalid message version. Got 3 but previous messages on this connection had version 4"
    )
    stats = proxy.stats()
    assert stats.requests == {(4, "OPTIONS"): 1, (4, "QUERY"): 1}
    assert stats.responses == {(4, "RESULT"): 2}
