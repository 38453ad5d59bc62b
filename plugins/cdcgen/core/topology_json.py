"""JSON interchange for topology descriptions and rings (the CLI, tests and the lake).

A description is ``{"entries": [{"token_range_end": int, "sharding_ignore_msb": int,
"streams": ["<32 hex>", ...]}]}``; a ring is ``{"nodes": [{"name": str, "shard_count":
int, "ignore_msb": int, "tokens": [int, ...]}]}``. Reading checks every field and names
the one that is wrong (:class:`~cdcgen.core.errors.InvalidDescription`,
:class:`~cdcgen.core.errors.InvalidTopology`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, TypedDict

from cdcgen.core.errors import InvalidDescription, InvalidStreamId, InvalidTopology
from cdcgen.core.stream_id import StreamId
from cdcgen.core.topology import Node, TokenRange, TopologyDescription


class EntryJson(TypedDict):
    """A description entry: its token range's end, sharding, and streams as hex."""

    token_range_end: int
    sharding_ignore_msb: int
    streams: list[str]


class DescriptionJson(TypedDict):
    """A description document: its entries in ring order."""

    entries: list[EntryJson]


class NodeJson(TypedDict):
    """A node of a topology file."""

    name: str
    shard_count: int
    ignore_msb: int
    tokens: list[int]


class TopologyJson(TypedDict):
    """A topology file: the nodes a generation is made for."""

    nodes: list[NodeJson]


def description_to_json(description: TopologyDescription) -> DescriptionJson:
    """``{"entries": [{"token_range_end", "sharding_ignore_msb", "streams"}]}``, ring order."""
    return DescriptionJson(
        entries=[
            EntryJson(
                token_range_end=entry.range_end,
                sharding_ignore_msb=entry.sharding_ignore_msb,
                streams=[stream.hex for stream in entry.streams],
            )
            for entry in description.entries
        ]
    )


def _field(obj: Mapping[str, Any], name: str, where: str) -> Any:
    if name not in obj:
        raise InvalidDescription(f"{where}: missing field {name!r}")
    return obj[name]


def _int_field(obj: Mapping[str, Any], name: str, where: str) -> int:
    value = _field(obj, name, where)
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidDescription(f"{where}.{name}: expected an integer, got {value!r}")
    return value


def _list_field(obj: Mapping[str, Any], name: str, where: str) -> list[Any]:
    value = _field(obj, name, where)
    if not isinstance(value, list):
        raise InvalidDescription(f"{where}.{name}: expected a list, got {type(value).__name__}")
    return value


def _object(value: Any, where: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise InvalidDescription(f"{where}: expected an object, got {type(value).__name__}")
    return value


def description_from_json(obj: Any) -> TopologyDescription:
    """Parse :func:`description_to_json` output; errors name the entry and field."""
    entries_json = _list_field(_object(obj, "description"), "entries", "description")
    entries = []
    for i, entry_json in enumerate(entries_json):
        where = f"entries[{i}]"
        entry = _object(entry_json, where)
        range_end = _int_field(entry, "token_range_end", where)
        ignore_msb = _int_field(entry, "sharding_ignore_msb", where)
        streams = []
        for j, text in enumerate(_list_field(entry, "streams", where)):
            try:
                streams.append(StreamId.from_hex(text))
            except InvalidStreamId as exc:
                raise InvalidDescription(f"{where}.streams[{j}]: {exc}") from exc
        try:
            entries.append(TokenRange(range_end, tuple(streams), ignore_msb))
        except InvalidDescription as exc:
            raise InvalidDescription(f"{where}: {exc}") from exc
    return TopologyDescription(tuple(entries))


def nodes_to_json(nodes: Iterable[Node]) -> TopologyJson:
    """The topology file format read by :func:`nodes_from_json`."""
    return TopologyJson(
        nodes=[
            NodeJson(
                name=node.name,
                shard_count=node.shard_count,
                ignore_msb=node.ignore_msb,
                tokens=list(node.tokens),
            )
            for node in nodes
        ]
    )


def nodes_from_json(obj: Any) -> tuple[Node, ...]:
    """Parse ``{"nodes": [{"name", "shard_count", "ignore_msb", "tokens"}]}``."""
    try:
        nodes_json = _list_field(_object(obj, "topology"), "nodes", "topology")
        nodes = []
        for i, node_json in enumerate(nodes_json):
            where = f"nodes[{i}]"
            node = _object(node_json, where)
            name = _field(node, "name", where)
            if not isinstance(name, str):
                raise InvalidDescription(f"{where}.name: expected a string, got {name!r}")
            tokens = _list_field(node, "tokens", where)
            for j, token in enumerate(tokens):
                if isinstance(token, bool) or not isinstance(token, int):
                    raise InvalidDescription(
                        f"{where}.tokens[{j}]: expected an integer, got {token!r}"
                    )
            try:
                nodes.append(
                    Node(
                        name=name,
                        shard_count=_int_field(node, "shard_count", where),
                        ignore_msb=_int_field(node, "ignore_msb", where),
                        tokens=tuple(tokens),
                    )
                )
            except InvalidTopology as exc:
                raise InvalidTopology(f"{where}: {exc}") from exc
    except InvalidDescription as exc:
        raise InvalidTopology(str(exc)) from exc
    return tuple(nodes)
