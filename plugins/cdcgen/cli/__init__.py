"""The `cdcgen` command line: one sub-command group per module in this package.

Each group module exposes ``register(subparsers)`` which adds its parser and sets
``func`` on it; ``func(args) -> int`` returns the exit status.  Groups are imported
lazily so `cdcgen stream-id decode` does not pay for Spark or Airflow.  Other
distributions add groups through the entry point group ``cdcgen.cli``
(:mod:`cdcgen.extensions`): that is how ``cdcgen sandbox`` arrives with the
development harness.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from cdcgen.extensions import CLI_GROUPS, registered

# Group modules, in the order they appear in --help (plugged-in groups follow).
GROUPS: tuple[str, ...] = (
    "cdcgen.cli.stream_id",
    "cdcgen.cli.generation",
    "cdcgen.cli.generations",
    "cdcgen.cli.lake",
)


class CliError(Exception):
    """A user-facing error: printed to stderr as one line, exit status 2."""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="cdcgen",
        description="Follow ScyllaDB CDC generations: inspect stream IDs, build, look up, "
        "validate and publish generations, run the local sandbox.",
    )
    sub = parser.add_subparsers(dest="group", metavar="COMMAND", required=True)
    for name in GROUPS:
        importlib.import_module(name).register(sub)
    for plugin in registered(CLI_GROUPS).values():
        plugin.load().register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        status: int = args.func(args)
    except CliError as exc:
        print(f"cdcgen: error: {exc}", file=sys.stderr)
        return 2
    return status


if __name__ == "__main__":
    sys.exit(main())
