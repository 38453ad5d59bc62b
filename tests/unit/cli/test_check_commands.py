"""`cdcgen check` (cdcgen.cli.check_commands): a line per check, or a JSON object per check, and the
exit status of findings. Nothing answers here: no node, no Spark master; the lake is a
temporary folder."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest

from cdcgen.cli import main
from cdcgen.core.errors import ExitCode
from cdcgen.pipeline.preflight import CheckResult


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture
def nothing_answers(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> int:
    port = closed_port()
    monkeypatch.setenv("CDCGEN_CONTACT_POINTS", "127.0.0.1")
    monkeypatch.setenv("CDCGEN_PORT", str(port))
    monkeypatch.setenv("CDCGEN_SPARK_MASTER", f"spark://127.0.0.1:{port}")
    monkeypatch.delenv("CDCGEN_SPARK_REMOTE", raising=False)
    monkeypatch.setenv("CDCGEN_LAKE_PATH", str(tmp_path / "lake"))
    return port


def test_each_check_is_one_line_and_a_failure_exits_with_findings(
    nothing_answers: int, capsys: pytest.CaptureFixture[str]
) -> None:
    status = main(["check"])
    out, err = capsys.readouterr()
    assert status == ExitCode.FINDINGS and err == ""
    connection, spark, lake = out.splitlines()
    assert connection.startswith("FAIL  connection: ConnectionFailed: no CQL node answered")
    assert spark.startswith(f"FAIL  spark: master spark://127.0.0.1:{nothing_answers}: ")
    assert lake.startswith("ok    lake: ") and lake.endswith(
        "writable (a probe object written, read back and deleted)"
    )


def test_json_prints_one_check_result_per_line_on_stdout_only(
    nothing_answers: int, capsys: pytest.CaptureFixture[str]
) -> None:
    status = main(["check", "--json"])
    out, err = capsys.readouterr()
    assert status == ExitCode.FINDINGS and err == ""
    results = [CheckResult.model_validate(json.loads(line)) for line in out.splitlines()]
    assert [(r.check, r.ok) for r in results] == [
        ("connection", False),
        ("spark", False),
        ("lake", True),
    ]


def test_a_setting_it_cannot_take_is_a_usage_error(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("CDCGEN_PORT", "99999")
    assert main(["check"]) == ExitCode.USAGE
    assert "CDCGEN_PORT" in capsys.readouterr().err
