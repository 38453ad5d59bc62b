"""The product's extension points: Python entry points other distributions may fill.

Two groups, both looked up by name only when needed:

* ``cdcgen.clock_readers``: a clock source (``CDCGEN_CLOCK_SOURCE``) besides the built-in
  ``cql``; the entry point names a class built as ``Reader(client, config)``;
* ``cdcgen.cli``: a command group of the ``cdcgen`` command line; the entry point names a
  module with ``register(subparsers)``.

This is how a development harness lends the pipeline a simulated cluster's clocks and
its own commands without the product ever importing it.
"""

from __future__ import annotations

from functools import cache
from importlib.metadata import EntryPoint, entry_points

CLOCK_READERS = "cdcgen.clock_readers"
CLI_GROUPS = "cdcgen.cli"

#: The clock source the product implements itself (every node's ``now()`` over CQL).
CQL_CLOCKS = "cql"


@cache
def registered(group: str) -> dict[str, EntryPoint]:
    """The entry points of ``group`` by name (read once per process)."""
    return {point.name: point for point in entry_points(group=group)}


def clock_sources() -> tuple[str, ...]:
    """Every clock source this installation can build: ``cql`` and the plugged-in ones."""
    return (CQL_CLOCKS, *sorted(set(registered(CLOCK_READERS)) - {CQL_CLOCKS}))
