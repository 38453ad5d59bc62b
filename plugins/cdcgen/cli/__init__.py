"""The `cdcgen` command line: one sub-command group per module in this package.

Each group module exposes ``register(subparsers)`` which adds its parser and sets
``func`` on it; ``func(args) -> int`` returns the exit status.  Groups are imported
lazily so `cdcgen stream-id decode` does not pay for Spark or Airflow.  Other
distributions add groups through the entry point group ``cdcgen.cli``
(:mod:`cdcgen.extensions`): that is how ``cdcgen sandbox`` arrives with the
development harness.

Help texts are plain text: a module docstring becomes a description through
:func:`plain_text` (its reST markup goes, its indented examples stay), and every parser
formats with :class:`PlainHelpFormatter`, which wraps prose but keeps an example's
lines as they were written. Output a script reads is JSON on standard output (``--json``
on the commands that also print for people, :func:`add_json_flag`), one typed model per
line (:func:`print_model`); messages go to standard error.
"""

from __future__ import annotations

import argparse
import importlib
import inspect
import math
import re
import sys
import textwrap
from collections.abc import Iterable, Sequence
from importlib.metadata import PackageNotFoundError, version
from typing import TYPE_CHECKING, Any, NoReturn

from cdcgen.cli.errors import CliError
from cdcgen.core.errors import ExitCode, UnreadableJson
from cdcgen.core.user_text import echo, load_json, parse_decimal
from cdcgen.extensions import CLI_GROUPS, registered

if TYPE_CHECKING:
    from pydantic import BaseModel

# Group modules, in the order they appear in --help (plugged-in groups follow).
GROUPS: tuple[str, ...] = (
    "cdcgen.cli.stream_id_commands",
    "cdcgen.cli.generation_commands",
    "cdcgen.cli.generations_commands",
    "cdcgen.cli.lake_commands",
    "cdcgen.cli.changes_commands",
    "cdcgen.cli.replication_commands",
    "cdcgen.cli.check_commands",
)


_NUMBER = re.compile(r"-?[0-9]{1,15}(\.[0-9]{1,15})?([eE][-+]?[0-9]{1,3})?")


#: reST roles (``:mod:`x```, ``:func:`~a.b```) and inline literals (````x````) in docstrings.
_ROLE = re.compile(r":[a-z]+(?::[a-z]+)?:`~?([^`]+)`")
_LITERAL = re.compile(r"``(.+?)``", re.DOTALL)


def plain_text(doc: str | None, first: int = 0, last: int | None = None) -> str | None:
    """Paragraphs ``first`` to ``last`` of a docstring as plain help text: reST markup
    leaves no trace in ``--help`` (a role keeps its target's last name, a literal its
    text), and a paragraph ending in ``::`` keeps the indented example that follows it,
    which is how a reader sees what the output looks like."""
    if doc is None:
        return None
    paragraphs = inspect.cleandoc(doc).split("\n\n")
    chosen = "\n\n".join(paragraphs[first:last])
    chosen = _ROLE.sub(lambda match: match.group(1).rsplit(".", 1)[-1], chosen)
    chosen = _LITERAL.sub(r"\1", chosen)
    return re.sub(r"::$", ":", chosen, flags=re.MULTILINE)


class PlainHelpFormatter(argparse.HelpFormatter):
    """argparse's formatter, but a description's paragraphs stay paragraphs and an
    indented block (an example) keeps its line breaks: argparse's own joins every line of
    a description into one wrapped paragraph, which turns an example into prose."""

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        blocks = []
        for paragraph in text.split("\n\n"):
            lines = paragraph.splitlines()
            if lines and all(line.startswith(" ") for line in lines if line.strip()):
                blocks.append("\n".join(indent + line for line in lines))
            else:
                prose = " ".join(paragraph.split())
                blocks.append(
                    textwrap.fill(
                        prose, width, initial_indent=indent, subsequent_indent=indent,
                        break_on_hyphens=False,
                    )
                )  # fmt: skip
        return "\n\n".join(blocks)


class CliParser(argparse.ArgumentParser):
    """argparse, with its usage errors in one line like every other error (sub-command
    parsers are made of the same class), and plain-text help (:class:`PlainHelpFormatter`)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", PlainHelpFormatter)
        super().__init__(*args, **kwargs)

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


def add_json_flag(parser: argparse.ArgumentParser) -> None:
    """``--json``: the output for a script, on standard output, one JSON object a line."""
    parser.add_argument(
        "--json",
        action="store_true",
        help="print one JSON object per line, for scripts",
    )


def print_model(model: BaseModel) -> None:
    """One model as one line of JSON on standard output (what ``--json`` prints)."""
    sys.stdout.write(model.model_dump_json() + "\n")


def print_table(header: Sequence[str], rows: Iterable[Sequence[str]]) -> None:
    """Rows under a header, each column as wide as its widest cell (what people read)."""
    lines = [list(header), *(list(row) for row in rows)]
    widths = [max(len(line[column]) for line in lines) for column in range(len(header))]
    for line in lines:
        cells = [cell.ljust(width) for cell, width in zip(line, widths, strict=True)]
        print("  ".join(cells).rstrip())


def distribution_version() -> str:
    """The installed distribution's version (what a bug report should name)."""
    try:
        return version("cdcgen")
    except PackageNotFoundError:
        return "unknown (cdcgen is not installed as a distribution)"


def build_parser() -> argparse.ArgumentParser:
    parser = CliParser(
        prog="cdcgen",
        description="Follow ScyllaDB CDC generations: inspect stream IDs, build, look up, "
        "validate and publish generations, check a deployment, show the changes' and "
        "replication's progress, run the local sandbox.",
    )
    parser.add_argument("--version", action="version", version=f"cdcgen {distribution_version()}")
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
