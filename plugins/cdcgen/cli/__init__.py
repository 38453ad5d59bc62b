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
import math
import re
import sys
from collections.abc import Sequence
from typing import Any, NoReturn

from cdcgen.core.errors import ExitCode, TerminalError
from cdcgen.core.user_text import UnreadableJson, echo, load_json, parse_decimal
from cdcgen.extensions import CLI_GROUPS, registered

# Group modules, in the order they appear in --help (plugged-in groups follow).
GROUPS: tuple[str, ...] = (
    "cdcgen.cli.stream_id",
    "cdcgen.cli.generation",
    "cdcgen.cli.generations",
    "cdcgen.cli.lake",
    "cdcgen.cli.replication",
)


_NUMBER = re.compile(r"-?[0-9]{1,15}(\.[0-9]{1,15})?([eE][-+]?[0-9]{1,3})?")


class CliError(TerminalError):
    """A user-facing error: printed to stderr as one line. Its exit status is its cause's
    kind (:func:`exit_status`): a value the command was given is a usage error."""


class CliParser(argparse.ArgumentParser):
    """argparse, with its usage errors in one line like every other error (sub-command
    parsers are made of the same class)."""

    def error(self, message: str) -> NoReturn:
        self.exit(ExitCode.USAGE, f"{self.prog}: error: {message} (see {self.prog} -h)\n")


def decimal(text: str) -> int:
    """An argparse ``type``: ASCII decimal only (``int`` also takes ' 5', '1_000', '٥')."""
    try:
        return parse_decimal(text, "value")
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def finite(text: str) -> float:
    """An argparse ``type``: a plain decimal number (``float`` also takes 'inf', 'nan',
    ' 1', '1_0', and an endless duration or rate is a runaway, not a setting)."""
    if not _NUMBER.fullmatch(text) or not math.isfinite(value := float(text)):
        raise argparse.ArgumentTypeError(f"{echo(text)} is not a finite decimal number")
    return value


def read_json_file(path: str, what: str) -> Any:
    """Parse a JSON file (``-`` for stdin); unreadable or invalid files are user errors."""
    try:
        if path == "-":
            return load_json(sys.stdin, f"{what} input")
        with open(path, encoding="utf-8") as handle:
            return load_json(handle, f"{what} file {path}")
    except OSError as exc:
        raise CliError(f"cannot read {what} file {path}: {exc.strerror or exc}") from exc
    except UnreadableJson as exc:
        raise CliError(str(exc)) from None


def build_parser() -> argparse.ArgumentParser:
    parser = CliParser(
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
        return exit_status(exc)
    return status


def exit_status(error: CliError) -> ExitCode:
    """What the error it wraps is: transient (the cluster did not answer: try again) or
    terminal (it refused, or what it holds is unusable); a value the command was given
    (a ``ValueError``, or no cause at all) is a usage error."""
    from cdcgen.adapters.errors import exit_code, is_terminal, is_transient

    cause = error.__cause__ or error.__context__
    if cause is None or isinstance(cause, ValueError):
        return ExitCode.USAGE
    if is_transient(cause) or is_terminal(cause):
        return exit_code(cause)
    return ExitCode.USAGE


if __name__ == "__main__":
    sys.exit(main())
