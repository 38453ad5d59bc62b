"""The `cdcgen stream-id` and `cdcgen generation` command groups."""

from __future__ import annotations

import json
import random
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from cdcgen.cli import main
from cdcgen.core.stream_id import StreamId
from cdcgen.core.topology import Node, make_generation
from cdcgen.core.topology_json import description_from_json, description_to_json, nodes_from_json

JAVA_VECTOR = "0123456789abcdeffffffffffffffff1"

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


# --- stream-id decode ----------------------------------------------------------------------


def test_decode_prints_one_json_object_per_id(capsys: pytest.CaptureFixture[str]) -> None:
    other = StreamId.from_parts(-5, 3, 9)
    status, out, _ = run(capsys, "stream-id", "decode", "0x" + JAVA_VECTOR.upper(), other.hex)
    assert status == 0
    first, second = (json.loads(line) for line in out.splitlines())
    assert first == {
        "stream_id": JAVA_VECTOR,
        "token": 0x0123456789ABCDEF,
        "index": 2**22 - 1,
        "version": 1,
        "random": 2**38 - 1,
        "shard": None,
    }
    assert (second["token"], second["index"], second["random"]) == (-5, 3, 9)


def test_decode_with_shards(capsys: pytest.CaptureFixture[str]) -> None:
    # Token 0x0123456789ABCDEF is just past the middle of the ring: with 2 shards and
    # ignore_msb 0 it is on shard 1; with ignore_msb 1 it is in the second chunk's
    # first half, shard 0.
    _, out, _ = run(
        capsys, "stream-id", "decode", JAVA_VECTOR, "--shards", "2", "--ignore-msb", "0"
    )
    assert json.loads(out)["shard"] == 1
    _, out, _ = run(
        capsys, "stream-id", "decode", JAVA_VECTOR, "--shards", "2", "--ignore-msb", "1"
    )
    assert json.loads(out)["shard"] == 0


def test_decode_default_ignore_msb_is_12(capsys: pytest.CaptureFixture[str]) -> None:
    # Unbiased, the token is 0x8123456789ABCDEF; dropping its 12 high bits leaves
    # 0x3456789ABCDEF000, about 0.205 of a chunk: shard 0 of 4, shard 1 of 5.
    _, out, _ = run(capsys, "stream-id", "decode", JAVA_VECTOR, "--shards", "4")
    assert json.loads(out)["shard"] == 0
    _, out, _ = run(capsys, "stream-id", "decode", JAVA_VECTOR, "--shards", "5")
    assert json.loads(out)["shard"] == 1


def test_decode_bad_id_fails_naming_input(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, err = run(capsys, "stream-id", "decode", JAVA_VECTOR, "0xnothex")
    assert status == 2
    assert out == ""  # nothing printed when any ID is bad
    assert "'0xnothex'" in err and "not hex" in err


def test_decode_wrong_version_fails(capsys: pytest.CaptureFixture[str]) -> None:
    status, _, err = run(capsys, "stream-id", "decode", "365fd1a9ae34373954529ac8169dfb93")
    assert status == 2
    assert "Unknown CDC stream id version 3" in err


def test_decode_bad_shards(capsys: pytest.CaptureFixture[str]) -> None:
    status, _, err = run(capsys, "stream-id", "decode", JAVA_VECTOR, "--shards", "0")
    assert status == 2 and "shard count 0" in err


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
    from cdcgen.cli import generation

    assert generation.add_build in generation.SUBCOMMANDS
    assert generation.add_lookup in generation.SUBCOMMANDS


# --- the installed console script -----------------------------------------------------------


def console_script() -> str | None:
    candidate = Path(sys.executable).parent / "cdcgen"
    if candidate.exists():
        return str(candidate)
    return shutil.which("cdcgen")


@pytest.mark.skipif(console_script() is None, reason="cdcgen console script not installed")
def test_console_script_decodes_and_fails_cleanly() -> None:
    script = console_script()
    assert script is not None
    ok = subprocess.run(
        [script, "stream-id", "decode", JAVA_VECTOR], capture_output=True, text=True
    )
    assert ok.returncode == 0, ok.stderr
    assert json.loads(ok.stdout)["token"] == 0x0123456789ABCDEF
    bad = subprocess.run([script, "stream-id", "decode", "1234"], capture_output=True, text=True)
    assert bad.returncode == 2
    assert "'1234'" in bad.stderr and "is 2 bytes, expected 16" in bad.stderr
