"""The executor's preload: every task module and GX imported, and nothing left running."""

from __future__ import annotations

import subprocess
import sys
import threading
from pathlib import Path

import pytest

from cdcgen.airflow import preload as preload_module

PROGRAM = """
import sys
from cdcgen.airflow.preload import TASK_MODULES, preload

assert "great_expectations" not in sys.modules
preload()
missing = [name for name in TASK_MODULES if name not in sys.modules]
print("RESULT", missing, "great_expectations.data_context" in sys.modules)
import great_expectations.expectations.registry as registry
print("RESULT", "expect_stream_token_on_its_shard" in registry._registered_expectations)
"""


def test_preload_imports_every_task_module_and_gx_with_its_expectations() -> None:
    done = subprocess.run(
        [sys.executable, "-c", PROGRAM], capture_output=True, text=True, timeout=180, check=True
    )
    # Airflow's logging may print to stdout as well.
    modules, registered = [ln for ln in done.stdout.splitlines() if ln.startswith("RESULT ")]
    assert modules == "RESULT [] True"
    assert registered == "RESULT True"


def test_preload_refuses_to_leave_a_thread_behind(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A module that starts a thread on import would be half-copied by the fork; the
    caller's own threads (a scheduler has some) are not the preload's to refuse."""
    stop = threading.Event()
    callers = threading.Thread(target=stop.wait, name="callers")
    callers.start()
    (tmp_path / "cdcgen_test_threaded.py").write_text(
        "import threading\n"
        "STOP = threading.Event()\n"
        "POLLER = threading.Thread(target=STOP.wait, name='poller')\n"
        "POLLER.start()\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(preload_module, "TASK_MODULES", ("cdcgen_test_threaded",))
    try:
        with pytest.raises(preload_module.PreloadError, match="unsafe to fork: \\['poller'\\]"):
            preload_module.preload()
    finally:
        stop.set()
        callers.join()
        threaded = sys.modules.pop("cdcgen_test_threaded", None)
        if threaded is not None:
            threaded.STOP.set()
            threaded.POLLER.join()
