"""Importing GX for validation: scipy.stats deferred until used, GX itself complete."""

from __future__ import annotations

import subprocess
import sys

PROGRAM = """
import sys
from cdcgen.validation.gx_runner import import_gx

gx = import_gx()
assert gx.ExpectationSuite is not None
import great_expectations.expectations as gxe
assert gxe.ExpectColumnKLDivergenceToBeLessThan is not None  # the module importing scipy
print(type(sys.modules["scipy.stats"]).__name__)
import scipy.stats
print(round(float(scipy.stats.entropy([0.5, 0.5])), 4), type(sys.modules["scipy.stats"]).__name__)
"""


def test_gx_imports_without_loading_scipy_stats_which_still_works_when_used() -> None:
    done = subprocess.run(
        [sys.executable, "-c", PROGRAM], capture_output=True, text=True, timeout=120, check=True
    )
    deferred, used = done.stdout.split("\n")[:2]
    assert deferred == "_LazyModule"
    assert used == "0.6931 module"
