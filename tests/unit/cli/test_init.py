"""The command line as a whole (cdcgen.cli): its version, and the help of every command in
plain text, examples kept whole."""

from __future__ import annotations

import argparse
import re
from collections.abc import Iterator
from importlib.metadata import version

import pytest

from cdcgen.cli import build_parser, main, plain_text

#: What reST leaves behind when a docstring reaches --help unconverted: an inline literal
#: (``x``), a role (:mod:`x`, :func:`~x`), a literal block's marker (a line ending in ::).
RST_MARKUP = re.compile(r"``|:[a-z]+(:[a-z]+)?:`|::$", re.MULTILINE)


def every_parser() -> Iterator[tuple[str, argparse.ArgumentParser]]:
    """Each command and sub-command, the plugged-in groups (the sandbox) included."""
    pending = [("cdcgen", build_parser())]
    while pending:
        name, parser = pending.pop()
        yield name, parser
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                pending += [(f"{name} {sub}", child) for sub, child in action.choices.items()]


def example_lines(description: str | None) -> list[str]:
    """The lines of a description's indented blocks (its examples), unindented."""
    return [line.strip() for line in (description or "").splitlines() if line.startswith("  ")]


PARSERS = dict(every_parser())


def test_the_walk_reaches_every_group_and_sub_command() -> None:
    for command in ("cdcgen lake migrate", "cdcgen changes status", "cdcgen check"):
        assert command in PARSERS
    assert len(PARSERS) > 20


@pytest.mark.parametrize("command", sorted(PARSERS))
def test_help_is_plain_text_and_keeps_its_examples_whole(command: str) -> None:
    parser = PARSERS[command]
    text = parser.format_help()
    markup = RST_MARKUP.search(text)
    assert markup is None, f"{command} --help shows reST markup {markup.group()!r}:\n{text}"
    lines = {line.strip() for line in text.splitlines()}
    for example in example_lines(parser.description):
        assert example in lines, f"{command} --help breaks the example line {example!r}:\n{text}"


def test_lake_migrate_help_shows_its_example_as_written(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit) as done:
        main(["lake", "migrate", "--help"])
    assert done.value.code == 0
    out = capsys.readouterr().out
    assert (
        '\n    {"generation": "generation_ts=1795334400005", "converted": true, "version": 3, '
        '...}\n    {"table": "shop.orders", "converted": true, "version": 0, "rows": 51234}\n'
    ) in out
    assert "CONVERT TO DELTA" in out and "``" not in out


def test_plain_text_drops_roles_and_literals_and_keeps_a_literal_block() -> None:
    doc = """Title.

    Uses :func:`~cdcgen.cli.main` and :mod:`cdcgen.extensions` with ``--json``::

        {"a": 1}
    """
    assert plain_text(doc, 1) == 'Uses main and extensions with --json:\n\n    {"a": 1}'


def test_version_is_the_distributions(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as done:
        main(["--version"])
    assert done.value.code == 0
    assert capsys.readouterr().out == f"cdcgen {version('cdcgen')}\n"
