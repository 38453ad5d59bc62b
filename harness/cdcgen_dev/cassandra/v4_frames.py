"""CQL native-protocol v4 framing, as much as the v4-only proxy needs to read (pure, no I/O).

ScyllaDB serves protocol versions 3 and 4 and nothing else. Its CQL server
(``transport/server.cc``, ``cql_server::connection::read_frame``) reads the *first byte*
of a new connection, and when that version is below 3 or above its ``current_version``
(4) it sets the connection's version to 4 and fails with
``protocol_exception("Invalid or unsupported protocol version: <n>")``. The connection's
``handle_error`` answers it with ``make_error(0, code, message)``: an ERROR frame
(opcode 0x00) on **stream 0**, **version 4** (``0x84`` with the response bit), flags 0,
body ``[int 0x000A PROTOCOL_ERROR][string message]``; then the connection is closed.
:func:`unsupported_version_error` builds exactly those bytes.

cassandra-driver recognises that answer by the words "unsupported protocol version" and
steps down one version (DSE v2 66 -> DSE v1 65 -> v5 -> v4; the beta v6 is skipped), a
new connection each time. The frames after that are v4: a 9-byte header
``[version][flags][stream: i16][opcode][length: i32]`` and ``length`` bytes of body.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

HEADER = struct.Struct(">BBhBi")
HEADER_SIZE = HEADER.size  # 9
RESPONSE_BIT = 0x80
#: What ScyllaDB accepts in the first byte of a connection (``_version < 3 || > 4``).
SCYLLA_VERSIONS = frozenset({3, 4})
SCYLLA_CURRENT_VERSION = 4
PROTOCOL_ERROR = 0x000A
COMPRESSION_FLAG = 0x01

# Opcodes (native_protocol_v4.spec section 2.4).
ERROR, STARTUP, READY, OPTIONS, SUPPORTED, QUERY, RESULT, PREPARE, EXECUTE, BATCH = (
    0x00,
    0x01,
    0x02,
    0x05,
    0x06,
    0x07,
    0x08,
    0x09,
    0x0A,
    0x0D,
)
OPCODE_NAMES = {
    ERROR: "ERROR",
    STARTUP: "STARTUP",
    READY: "READY",
    0x03: "AUTHENTICATE",
    OPTIONS: "OPTIONS",
    SUPPORTED: "SUPPORTED",
    QUERY: "QUERY",
    RESULT: "RESULT",
    PREPARE: "PREPARE",
    EXECUTE: "EXECUTE",
    0x0B: "REGISTER",
    0x0C: "EVENT",
    BATCH: "BATCH",
    0x0E: "AUTH_CHALLENGE",
    0x0F: "AUTH_RESPONSE",
    0x10: "AUTH_SUCCESS",
}
# Query flags (one byte in v4; an int from v5 on).
PAGE_SIZE_FLAG = 0x04
PAGING_STATE_FLAG = 0x08
# RESULT kinds.
ROWS_KIND, PREPARED_KIND = 0x0002, 0x0004
HAS_MORE_PAGES = 0x0002


class FrameError(ValueError):
    """Bytes that are not a v3/v4 frame the proxy can forward."""


@dataclass(frozen=True)
class Header:
    version: int  # without the response bit
    response: bool
    flags: int
    stream: int
    opcode: int
    length: int

    @property
    def compressed(self) -> bool:
        return bool(self.flags & COMPRESSION_FLAG)

    @property
    def opcode_name(self) -> str:
        return OPCODE_NAMES.get(self.opcode, f"0x{self.opcode:02x}")


def parse_header(data: bytes) -> Header:
    if len(data) != HEADER_SIZE:
        raise FrameError(f"a v4 header is {HEADER_SIZE} bytes, got {len(data)}")
    version, flags, stream, opcode, length = HEADER.unpack(data)
    if length < 0:
        raise FrameError(f"negative body length {length}")
    return Header(
        version & ~RESPONSE_BIT, bool(version & RESPONSE_BIT), flags, stream, opcode, length
    )


def header_bytes(header: Header) -> bytes:
    version = header.version | (RESPONSE_BIT if header.response else 0)
    return HEADER.pack(version, header.flags, header.stream, header.opcode, header.length)


def string(text: str) -> bytes:
    """A protocol ``[string]``: a short length and UTF-8 bytes."""
    raw = text.encode()
    return struct.pack(">H", len(raw)) + raw


def error_frame(code: int, message: str, *, stream: int = 0, version: int = 4) -> bytes:
    body = struct.pack(">i", code) + string(message)
    return header_bytes(Header(version, True, 0, stream, ERROR, len(body))) + body


def unsupported_version_error(client_version: int) -> bytes:
    """The frame ScyllaDB answers a connection opened with ``client_version`` with."""
    return error_frame(
        PROTOCOL_ERROR,
        f"Invalid or unsupported protocol version: {client_version}",
        stream=0,
        version=SCYLLA_CURRENT_VERSION,
    )


def mixed_version_error(got: int, previous: int) -> bytes:
    """ScyllaDB's answer (``parse_frame``) to a frame whose version differs from the
    connection's first frame."""
    return error_frame(
        PROTOCOL_ERROR,
        f"Invalid message version. Got {got} but previous messages on this connection "
        f"had version {previous}",
        stream=0,
        version=previous,
    )


def parse_error(body: bytes) -> tuple[int, str]:
    """``(code, message)`` of an ERROR body."""
    (code,) = struct.unpack_from(">i", body)
    (size,) = struct.unpack_from(">H", body, 4)
    return code, body[6 : 6 + size].decode()


def query_text(body: bytes) -> str:
    """The statement of a QUERY or PREPARE body (it starts with a ``[long string]``)."""
    (size,) = struct.unpack_from(">i", body)
    return body[4 : 4 + size].decode()


def prepared_id_of_execute(body: bytes) -> bytes:
    """The ``[short bytes]`` id an EXECUTE body starts with."""
    (size,) = struct.unpack_from(">H", body)
    return body[2 : 2 + size]


def query_flags(opcode: int, body: bytes) -> int:
    """The v4 ``<flags>`` byte of a QUERY or EXECUTE: after the statement (or id) and the
    ``[consistency]`` short."""
    if opcode == QUERY:
        (size,) = struct.unpack_from(">i", body)
        offset = 4 + size
    elif opcode == EXECUTE:
        (size,) = struct.unpack_from(">H", body)
        offset = 2 + size
    else:
        raise FrameError(f"no query flags in a {OPCODE_NAMES.get(opcode, opcode)} frame")
    return int(body[offset + 2])


def result_kind(body: bytes) -> int:
    (kind,) = struct.unpack_from(">i", body)
    return int(kind)


def prepared_id_of_result(body: bytes) -> bytes:
    """The id of a ``Prepared`` RESULT (``[int kind=4][short bytes id]...``)."""
    if result_kind(body) != PREPARED_KIND:
        raise FrameError("not a Prepared result")
    (size,) = struct.unpack_from(">H", body, 4)
    return body[6 : 6 + size]


def rows_have_more_pages(body: bytes) -> bool:
    """Whether a ``Rows`` RESULT's metadata says more pages follow."""
    if result_kind(body) != ROWS_KIND:
        return False
    (flags,) = struct.unpack_from(">i", body, 4)
    return bool(flags & HAS_MORE_PAGES)
