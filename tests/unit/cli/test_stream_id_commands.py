"""The `cdcgen stream-id` command group (cdcgen.cli.stream_id_commands), and the installed
`cdcgen` console script."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from cdcgen.cli import main
from cdcgen.core.stream_id import StreamId

JAVA_VECTOR = "0123456789abcdeffffffffffffffff1"


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
