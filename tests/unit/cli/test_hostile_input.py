"""Malformed input on the command line and in the files it names: every case ends with
one clear line on stderr and exit status 2: no traceback, no runaway."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest

from cdcgen.cli import main
from cdcgen.core.errors import InvalidTimestamp, InvalidToken, InvalidTopology
from cdcgen.core.generation_arrays import build_generation_arrays
from cdcgen.core.ring import ring_from_rows
from cdcgen.core.time import parse_moment
from cdcgen.core.tokens import parse_token
from cdcgen.core.topology import Node, make_generation
from cdcgen.core.topology_json import nodes_from_json

THOUSANDS_OF_DIGITS = "9" * 5000
NODE = {"name": "a", "shard_count": 2, "ignore_msb": 12, "tokens": [1, 2, 3]}


def fails_in_one_line(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    """The one line a command prints when it refuses ``argv``."""
    try:
        status = main(list(argv))
    except SystemExit as exit_:  # argparse's own refusals
        status = exit_.code  # type: ignore[assignment]
    captured = capsys.readouterr()
    assert status == 2, captured.err
    assert captured.out == ""
    assert "Traceback" not in captured.err
    assert len(captured.err.splitlines()) == 1, captured.err
    assert len(captured.err) < 400, "the input is echoed briefly, not whole"
    return captured.err


@pytest.fixture
def description(tmp_path: Path) -> Path:
    nodes = (Node("a", 2, 12, (-100, 5 * 10**18)),)
    path = tmp_path / "description.json"
    path.write_text(json.dumps(build_generation_arrays(nodes, random.Random(1)).description_json()))
    return path


def write(tmp_path: Path, name: str, text: str | bytes) -> str:
    path = tmp_path / name
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    return str(path)


@pytest.mark.parametrize(
    ("token", "said"),
    [
        (" 5", "not a decimal integer"),
        ("5 ", "not a decimal integer"),
        ("1_000", "not a decimal integer"),
        ("٥", "not a decimal integer"),  # ARABIC-INDIC DIGIT FIVE: int() takes it
        ("+5", "not a decimal integer"),
        ("0x10", "not a decimal integer"),
        (THOUSANDS_OF_DIGITS, "not a decimal integer"),
        ("9223372036854775808", "outside the signed 64-bit range"),
    ],
)
def test_lookup_refuses_tokens_int_would_take_or_choke_on(
    capsys: pytest.CaptureFixture[str], description: Path, token: str, said: str
) -> None:
    err = fails_in_one_line(
        capsys, "generation", "lookup", "--description", str(description), token
    )
    assert said in err
    with pytest.raises(InvalidToken):
        parse_token(token)


def test_plain_tokens_still_look_up(capsys: pytest.CaptureFixture[str], description: Path) -> None:
    assert main(["generation", "lookup", "--description", str(description), "-5", "42"]) == 0
    assert len(capsys.readouterr().out.split()) == 2


@pytest.mark.parametrize(
    ("name", "text", "said"),
    [
        (
            "digits.json",
            f'{{"nodes": [{{"tokens": [{THOUSANDS_OF_DIGITS}]}}]}}',
            "thousands of digits",
        ),
        ("nested.json", "[" * 100_000 + "]" * 100_000, "nests deeper"),
        ("binary.json", b"\xff\xfe{", "not UTF-8"),
        ("broken.json", '{"nodes": [', "not valid JSON"),
    ],
)
def test_unreadable_files_are_named_in_one_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, name: str, text: str | bytes, said: str
) -> None:
    path = write(tmp_path, name, text)
    for argv in (
        ("generation", "build", "--topology", path),
        ("generation", "lookup", "--description", path, "5"),
        ("generation", "validate", path),
    ):
        err = fails_in_one_line(capsys, *argv)
        assert said in err and name in err


def test_a_topology_asking_for_a_billion_shards_is_refused_before_any_work(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = write(tmp_path, "t.json", json.dumps({"nodes": [{**NODE, "shard_count": 10**9}]}))
    err = fails_in_one_line(capsys, "generation", "build", "--topology", path)
    assert "shard count 1000000000 must be an integer from 1 to 4096" in err
    with pytest.raises(InvalidTopology, match="shard count"):
        nodes_from_json({"nodes": [{**NODE, "shard_count": 10**9}]})


def test_a_ring_asking_for_more_streams_than_a_generation_may_have_is_refused() -> None:
    nodes = [Node("a", 4096, 12, tuple(range(1, 5000)))]  # 20,475,904 streams
    with pytest.raises(InvalidTopology, match="20,475,904 streams"):
        build_generation_arrays(nodes, random.Random(1))
    with pytest.raises(InvalidTopology, match="20,475,904 streams"):
        make_generation(nodes, random.Random(1))


@pytest.mark.parametrize("shards", ["1e20", "1_0", " 2", "²", "100000000000"])
def test_stream_id_decode_refuses_shard_counts_that_are_not_counts(
    capsys: pytest.CaptureFixture[str], shards: str
) -> None:
    err = fails_in_one_line(capsys, "stream-id", "decode", "--shards", shards, "00" * 16)
    assert "shard" in err


@pytest.mark.parametrize("text", [THOUSANDS_OF_DIGITS, "99999999999999999999", "٥", "1_0"])
def test_timestamps_are_milliseconds_or_iso_and_nothing_else(text: str) -> None:
    with pytest.raises(InvalidTimestamp, match="timestamp"):
        parse_moment(text, "timestamp")
    assert parse_moment("1700000000000").year == 2023


def test_ring_tokens_read_from_the_cluster_are_plain_decimals() -> None:
    rows: list[tuple[str, Any, Any, Any, str]] = [("a", ["5", " 6"], 2, 12, "normal")]
    with pytest.raises(InvalidTopology, match="node a: token ' 6' is not a decimal"):
        ring_from_rows(rows, "test")


def test_validate_never_deletes_a_report_folder_it_did_not_write(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, description: Path
) -> None:
    site = tmp_path / "reports"  # a report site: its index, its records
    (site / "runs").mkdir(parents=True)
    (site / "index.html").write_text("every run")
    (site / "runs" / "run.json").write_text("{}")
    err = fails_in_one_line(
        capsys, "generation", "validate", str(description), "--report", str(site)
    )
    assert "holds files a validation did not write (runs)" in err
    assert sorted(p.name for p in site.rglob("*")) == ["index.html", "run.json", "runs"]
