"""`generation validate|publish` and `generations list`: parsing and user errors (no Spark)."""

from __future__ import annotations

import argparse
import json
import socket
from datetime import UTC, datetime
from pathlib import Path

import pytest

from cdcgen.cli import generations_commands as generations_cli
from cdcgen.cli import main
from cdcgen.cli.errors import CliError
from cdcgen.cli.generation_ops import (
    connection_config,
    load_columns,
    load_publication,
    parse_timestamp,
    register_subcommands,
)
from cdcgen.core.errors import ExitCode


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser()
    register_subcommands(parser.add_subparsers(dest="command"))
    return parser


def test_subcommands_parse() -> None:
    args = _parser().parse_args(
        ["validate", "g.json", "--topology", "t.json", "--previous", "p.json", "--report", "r"]
    )
    assert (args.file, args.topology, args.previous, args.report) == (
        "g.json",
        "t.json",
        "p.json",
        "r",
    )
    args = _parser().parse_args(
        ["publish", "--description", "g.json", "--timestamp", "2026-11-22T10:00:00Z",
         "--keyspace", "ks", "--contact-points", "10.0.0.1,10.0.0.2", "10.0.0.3", "--force"]
    )  # fmt: skip
    assert args.force
    config = connection_config(args)
    assert config.target_keyspace == "ks"
    assert config.contact_points == ("10.0.0.1", "10.0.0.2", "10.0.0.3")


def test_generations_group_registers_list() -> None:
    parser = argparse.ArgumentParser()
    generations_cli.register(parser.add_subparsers(dest="group"))
    args = parser.parse_args(["generations", "list", "--published-only", "--keyspace", "ks"])
    assert args.published_only and args.func is generations_cli.list_command


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2026-11-22T10:00:00.250Z", datetime(2026, 11, 22, 10, 0, 0, 250000, tzinfo=UTC)),
        ("2026-11-22T10:00:00", datetime(2026, 11, 22, 10, tzinfo=UTC)),
        ("1795305600000", datetime(2026, 11, 22, tzinfo=UTC)),
    ],
)
def test_timestamps_parse_as_utc_milliseconds(text: str, expected: datetime) -> None:
    assert parse_timestamp(text) == expected


@pytest.mark.parametrize("text", ["yesterday", "2026-11-22T10:00:00.000001Z"])
def test_bad_timestamps_are_user_errors(text: str) -> None:
    with pytest.raises(CliError, match="timestamp"):
        parse_timestamp(text)


def test_unreadable_or_broken_descriptions_are_user_errors(tmp_path: Path) -> None:
    with pytest.raises(CliError, match="cannot read"):
        load_columns(str(tmp_path / "missing.json"))
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"entries": [{"token_range_end": 1, "streams": []}]}))
    with pytest.raises(CliError, match="sharding_ignore_msb"):
        load_columns(str(bad))
    # Loadable for validation, but not publishable: an entry without streams.
    empty = tmp_path / "empty.json"
    empty.write_text(
        json.dumps({"entries": [{"token_range_end": 1, "sharding_ignore_msb": 0, "streams": []}]})
    )
    assert load_columns(str(empty)).entry_count == 1
    with pytest.raises(CliError, match="cannot publish"):
        load_publication(str(empty))


def test_publish_refuses_the_consumers_keyspace_unless_it_is_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Refused before any connection: the port is one nothing listens on, so a command
    that went on would fail to connect instead (and never reach a real cluster)."""
    description = tmp_path / "g.json"
    stream = "00000000000000010000000000000011"
    entry = {"token_range_end": 1, "sharding_ignore_msb": 0, "streams": [stream]}
    description.write_text(json.dumps({"entries": [entry]}))
    monkeypatch.delenv("CDCGEN_TARGET_KEYSPACE", raising=False)
    monkeypatch.setenv("CDCGEN_CONTACT_POINTS", "127.0.0.1")
    monkeypatch.setenv("CDCGEN_PORT", str(closed_port()))
    argv = ["generation", "publish", "--description", str(description),
            "--timestamp", "2026-11-22T10:00:00Z"]  # fmt: skip
    assert main(argv) == ExitCode.USAGE
    refused = capsys.readouterr().err
    assert "no target keyspace named: pass --keyspace or set CDCGEN_TARGET_KEYSPACE" in refused
    assert "system_distributed" in refused
    # Past the check: no node answers, which another attempt may change.
    assert main([*argv, "--keyspace", "system_distributed"]) == ExitCode.TRANSIENT
    assert "no CQL node answered" in capsys.readouterr().err
    monkeypatch.setenv("CDCGEN_TARGET_KEYSPACE", "system_distributed")
    assert main(argv) == ExitCode.TRANSIENT
    assert "no CQL node answered" in capsys.readouterr().err


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])
