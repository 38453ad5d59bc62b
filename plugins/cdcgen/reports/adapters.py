"""Turn the pipeline's objects into report records: a topology description, GX results.

The only module of :mod:`cdcgen.reports` that knows those shapes, so the page
renderers stay plain-data functions.  GX results are read as the JSON dicts
``ExpectationSuiteValidationResult.to_json_dict()`` returns (no GX import here).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import numpy as np

from cdcgen.core.generation_arrays import GenerationArrays
from cdcgen.core.topology import TopologyDescription
from cdcgen.reports.records import ExpectationOutcome, RingEntry
from cdcgen.reports.ring_picture import MAX_STREAM_DOTS

NodeOf = Mapping[int, str] | Callable[[int], str | None]


def ring_from_description(
    description: TopologyDescription, owners: NodeOf | None = None
) -> tuple[RingEntry, ...]:
    """One :class:`RingEntry` per vnode; ``owners`` names the node owning a range end.

    ``owners`` is a mapping from ring token to node name (``system.topology`` tokens)
    or a function; ranges whose owner is unknown get the node name "".
    """
    node_of = _node_of(owners)
    dots = _draws_stream_dots(sum(len(entry.streams) for entry in description.entries))
    return tuple(
        RingEntry(
            range_start=description.range_start(index),
            range_end=entry.range_end,
            node=node_of(entry.range_end),
            shard_count=len(entry.streams),
            stream_tokens=tuple(stream.token for stream in entry.streams) if dots else (),
        )
        for index, entry in enumerate(description.entries)
    )


def ring_from_arrays(
    arrays: GenerationArrays, owners: NodeOf | None = None
) -> tuple[RingEntry, ...]:
    """:func:`ring_from_description` for the arrays form (no object per stream)."""
    node_of = _node_of(owners)
    ends = arrays.range_ends.tolist()
    starts = np.roll(arrays.range_ends, 1).tolist()
    offsets = arrays.offsets.tolist()
    tokens = arrays.stream_tokens().tolist() if _draws_stream_dots(offsets[-1]) else []
    return tuple(
        RingEntry(
            range_start=starts[i],
            range_end=end,
            node=node_of(end),
            shard_count=offsets[i + 1] - offsets[i],
            stream_tokens=tuple(tokens[offsets[i] : offsets[i + 1]]),
        )
        for i, end in enumerate(ends)
    )


def _draws_stream_dots(streams: int) -> bool:
    """Whether the ring picture draws these streams' dots, so the record needs their
    tokens: a 1.6M-stream generation's would make its record tens of megabytes, read
    again by every rebuild of the site, for a picture that shows none of them."""
    return streams <= MAX_STREAM_DOTS


def _node_of(owners: NodeOf | None) -> Callable[[int], str]:
    def node_of(token: int) -> str:
        if owners is None:
            return ""
        if callable(owners):
            return owners(token) or ""
        return owners.get(token, "")

    return node_of


def owners_from_nodes(nodes: Iterable[tuple[str, Iterable[int]]]) -> dict[int, str]:
    """``{token: node}`` from ``(node name, tokens)`` pairs."""
    return {token: name for name, tokens in nodes for token in tokens}


def _short(value: Any, limit: int = 160) -> str:
    text = value if isinstance(value, str) else json.dumps(value, default=str, sort_keys=True)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def expectation_from_gx(result: Mapping[str, Any]) -> ExpectationOutcome:
    """One ``results[i]`` item of a GX validation result dict."""
    config = result.get("expectation_config") or {}
    kwargs = config.get("kwargs") or {}
    meta = config.get("meta") or {}
    kind = config.get("type") or config.get("expectation_type") or "expectation"
    name = str(meta.get("name") or config.get("description") or kind)
    body = result.get("result") or {}
    details: list[str] = []
    exception = result.get("exception_info") or {}
    if exception.get("raised_exception"):
        details.append(f"error: {_short(exception.get('exception_message') or '')}")
    if "observed_value" in body:
        details.append(f"observed {_short(body['observed_value'])}")
    if body.get("unexpected_count"):
        details.append(f"{body['unexpected_count']} unexpected of {body.get('element_count', '?')}")
    column = kwargs.get("column")
    return ExpectationOutcome(
        name=name,
        passed=bool(result.get("success")),
        details="; ".join(details),
        column=None if column is None else str(column),
    )


def expectations_from_gx(validation: Mapping[str, Any]) -> tuple[ExpectationOutcome, ...]:
    """Every expectation of a suite validation result (``to_json_dict()`` form)."""
    return tuple(expectation_from_gx(item) for item in validation.get("results") or ())
