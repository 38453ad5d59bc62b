"""The emulator's CLI subcommands: registration, help, and user errors before any I/O."""

from __future__ import annotations

import argparse

import pytest

from cdcgen.cli.errors import CliError
from cdcgen_dev.cli.sandbox_emulator import SUBCOMMANDS, register_subcommands


@pytest.fixture
def parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="cdcgen sandbox")
    register_subcommands(parser.add_subparsers(dest="command", required=True))
    return parser


def test_every_subcommand_is_registered_with_help(
    parser: argparse.ArgumentParser, capsys: pytest.CaptureFixture[str]
) -> None:
    names = [
        "join-node", "leave-node", "create-table", "workload", "skew-clock", "mark-node", "clocks",
        "rewrite-v1", "split-tablets", "merge-tablets", "show",
    ]  # fmt: skip
    assert len(SUBCOMMANDS) == len(names)
    for name in names:
        with pytest.raises(SystemExit) as exit_info:
            parser.parse_args([name, "--help"])
        assert exit_info.value.code == 0
        out = capsys.readouterr().out
        assert f"cdcgen sandbox {name}" in out and "--contact-points" in out


def test_join_node_options(parser: argparse.ArgumentParser) -> None:
    args = parser.parse_args(
        ["join-node", "--mode", "gossip", "--shards", "4", "--fault", "ring-gap:2", "--seed", "7"]
    )
    assert (args.mode, args.shards, args.ignore_msb, args.vnodes) == ("gossip", 4, 12, 16)
    assert args.fault == ["ring-gap:2"] and args.seed == 7


def test_leave_node_names_the_node(parser: argparse.ArgumentParser) -> None:
    args = parser.parse_args(["leave-node", "node2", "--mode", "tablets"])
    assert (args.name, args.mode) == ("node2", "tablets")
    with pytest.raises(SystemExit):
        parser.parse_args(["leave-node"])


def test_unknown_fault_is_a_user_error_before_connecting(parser: argparse.ArgumentParser) -> None:
    args = parser.parse_args(["join-node", "--fault", "meteor", "--contact-points", "192.0.2.1"])
    with pytest.raises(CliError, match="unknown fault 'meteor'"):
        args.func(args)


def test_unreachable_cluster_is_a_user_error(parser: argparse.ArgumentParser) -> None:
    args = parser.parse_args(["show", "--contact-points", "127.0.0.254", "--port", "1"])
    with pytest.raises(CliError, match="sandbox up"):
        args.func(args)
