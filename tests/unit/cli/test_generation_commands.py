"""The `cdcgen generation` command group: `build` a description from a topology and
`lookup` tokens in one (cdcgen.cli.generation_commands)."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest

from cdcgen.cli import main
from cdcgen.core.topology import Node, make_generation
from cdcgen.core.topology_json import description_from_json, description_to_json, nodes_from_json

TOPOLOGY: dict[str, Any] = {
    "nodes": [
        {"name": "a", "shard_count": 2, "ignore_msb": 12, "tokens": [-100, 5 * 10**18]},
        {"name": "b", "shard_count": 3, "ignore_msb": 0, "tokens": [42]},
    ]
}


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    status = main(list(argv))
    captured = capsys.readouterr()
    return status, captured.out, captured.err


# --- generation build / lookup ---------------------------------------------------------------


@pytest.fixture
def topology_file(tmp_path: Path) -> Path:
    path = tmp_path / "topology.json"
    path.write_text(json.dumps(TOPOLOGY))
    return path


def test_build_matches_make_generation(
    capsys: pytest.CaptureFixture[str], topology_file: Path
) -> None:
    status, out, _ = run(
        capsys, "generation", "build", "--topology", str(topology_file), "--seed", "7"
    )
    assert status == 0
    document = json.loads(out)
    expected = make_generation(nodes_from_json(TOPOLOGY), random.Random(7))
    assert document == description_to_json(expected)
    assert [e["token_range_end"] for e in document["entries"]] == [-100, 42, 5 * 10**18]
    assert [e["sharding_ignore_msb"] for e in document["entries"]] == [12, 0, 12]
    assert [len(e["streams"]) for e in document["entries"]] == [2, 3, 2]


def test_build_without_seed_still_builds(
    capsys: pytest.CaptureFixture[str], topology_file: Path
) -> None:
    status, out, _ = run(capsys, "generation", "build", "--topology", str(topology_file))
    assert status == 0
    assert len(description_from_json(json.loads(out))) == 3


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{not json", "is not valid JSON"),
        (json.dumps({"nodes": [{"name": "a"}]}), "missing field 'tokens'"),
        (
            json.dumps(
                {
                    "nodes": [
                        {"name": "a", "shard_count": 1, "ignore_msb": 0, "tokens": [1]},
                        {"name": "b", "shard_count": 1, "ignore_msb": 0, "tokens": [1]},
                    ]
                }
            ),
            "token 1 is owned by both node a and node b",
        ),
    ],
)
def test_build_errors(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, content: str, message: str
) -> None:
    path = tmp_path / "bad.json"
    path.write_text(content)
    status, out, err = run(capsys, "generation", "build", "--topology", str(path))
    assert status == 2 and out == ""
    assert message in err and str(path) in err


def test_build_missing_file(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    status, _, err = run(capsys, "generation", "build", "--topology", str(tmp_path / "nope.json"))
    assert status == 2 and "cannot read topology file" in err


@pytest.fixture
def description_file(tmp_path: Path) -> Path:
    nodes = [Node("a", 2, 0, (-100,)), Node("b", 3, 0, (100,))]
    path = tmp_path / "description.json"
    path.write_text(json.dumps(description_to_json(make_generation(nodes, random.Random(1)))))
    return path


def test_lookup_prints_streams(capsys: pytest.CaptureFixture[str], description_file: Path) -> None:
    description = description_from_json(json.loads(description_file.read_text()))
    probes = ["-9223372036854775808", "-100", "-50", "0", "100", "9223372036854775807"]
    status, out, _ = run(
        capsys, "generation", "lookup", "--description", str(description_file), *probes
    )
    assert status == 0
    assert out.splitlines() == [description.get_stream(int(p)).hex for p in probes]
    # By hand: -50 is in (-100, 100] (entry 1, 3 shards, ignore 0), shard 1.
    assert out.splitlines()[2] == description.entries[1].streams[1].hex


def test_lookup_json_pairs_each_token_with_its_stream(
    capsys: pytest.CaptureFixture[str], description_file: Path
) -> None:
    argv = ["generation", "lookup", "--description", str(description_file), "--json"]
    status, out, _ = run(capsys, *argv, "-50", "100")
    description = description_from_json(json.loads(description_file.read_text()))
    assert status == 0
    assert [json.loads(line) for line in out.splitlines()] == [
        {"token": -50, "stream_id": description.get_stream(-50).hex},
        {"token": 100, "stream_id": description.get_stream(100).hex},
    ]


@pytest.mark.parametrize(
    ("token", "message"),
    [
        ("abc", "token 'abc' is not a decimal integer"),
        ("9223372036854775808", "outside the signed 64-bit"),
    ],
)
def test_lookup_bad_token(
    capsys: pytest.CaptureFixture[str], description_file: Path, token: str, message: str
) -> None:
    status, _, err = run(
        capsys, "generation", "lookup", "--description", str(description_file), token
    )
    assert status == 2 and message in err


def test_lookup_bad_description(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = tmp_path / "d.json"
    path.write_text(json.dumps({"entries": [{"token_range_end": 1, "sharding_ignore_msb": 0}]}))
    status, _, err = run(capsys, "generation", "lookup", "--description", str(path), "0")
    assert status == 2
    assert "entries[0]: missing field 'streams'" in err


def test_generation_group_is_extensible() -> None:
    from cdcgen.cli import generation_commands

    assert generation_commands.add_build in generation_commands.SUBCOMMANDS
    assert generation_commands.add_lookup in generation_commands.SUBCOMMANDS
