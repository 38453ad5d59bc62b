"""The provider as a team installs it: the wheel built from this checkout, in a virtualenv
that has only Airflow and the Spark provider besides, then the provider's two post-install
steps (docs/install.md).

One more distribution goes in, without its dependencies: this harness's, for the one
plugin the sandbox needs (the ``sandbox`` clock source, entry point group
``cdcgen.clock_readers``: the emulated nodes' clocks), as a deployment adds its own
plugins. The product is imported from the wheel alone.

The wheel test (``tests/e2e/test_provider_wheel.py``) and the demo's ``--airflow-python``
use it. It is built with uv, the project's pinned installer, against ``constraints.txt``
(the versions the project runs, as a deployment installs Airflow against Airflow's
constraints), and kept while nothing it is made of changes: a stamp holds the digest of
the wheel's contents, the constraints and the Python.

``python -m cdcgen_dev.provider_venv`` builds it and prints its Python.
"""

from __future__ import annotations

import hashlib
import shutil
import sys
import time
import zipfile
from dataclasses import dataclass
from pathlib import Path

from cdcgen_dev.devstack.processes import run
from cdcgen_dev.isolation import isolated_env
from cdcgen_dev.locking import file_lock
from cdcgen_dev.paths import REPO_ROOT

DEFAULT_ROOT = REPO_ROOT / "var" / "provider-venv"
CONSTRAINTS = REPO_ROOT / "constraints.txt"
#: What the virtualenv holds before the provider: Airflow and its Spark provider (with
#: PySpark, for spark-submit), nothing of this project's.
AIRFLOW = ("apache-airflow", "apache-airflow-providers-apache-spark[pyspark]")
_STAMP = ".cdcgen-provider-stamp"


@dataclass(frozen=True)
class ProviderVenv:
    """The virtualenv (``root``) and the wheel installed in it."""

    root: Path
    wheel: Path

    @property
    def python(self) -> Path:
        return self.root / "bin" / "python"

    @property
    def airflow(self) -> Path:
        return self.root / "bin" / "airflow"


def provider_venv(root: Path = DEFAULT_ROOT) -> ProviderVenv:
    """Build the wheel and, unless an identical one is installed in ``root``, the
    virtualenv; concurrent callers (two test sessions) build it once."""
    root.parent.mkdir(parents=True, exist_ok=True)
    with file_lock(root.parent / f".{root.name}.lock"):
        dist = root.parent / f"{root.name}-dist"
        wheel = build_wheel(REPO_ROOT, dist / "cdcgen")
        harness = build_wheel(REPO_ROOT / "harness", dist / "cdcgen-dev")
        venv = ProviderVenv(root, wheel)
        want = _stamp(wheel, harness)
        stamp = root / _STAMP
        if venv.python.exists() and stamp.exists() and stamp.read_text() == want:
            return venv
        shutil.rmtree(root, ignore_errors=True)
        uv = str(Path(sys.executable).parent / "uv")
        python = str(venv.python)
        _run([uv, "venv", "--quiet", "--python", sys.executable, str(root)])
        install = [uv, "pip", "install", "--quiet", "--python", python, "-c", str(CONSTRAINTS)]
        _run([*install, *AIRFLOW])
        _run([*install, f"{wheel}[provider]"])  # the extra adds nothing Airflow has
        _run([*install, "--no-deps", str(harness)])
        # -I: the installed package only, not the working folder nor any PYTHON* variable
        _run([python, "-I", "-m", "cdcgen.spark_runtime.install"])
        _run([python, "-I", "-m", "cdcgen.validation.docs_assets"])
        stamp.write_text(want)
        return venv


def build_wheel(project: Path, out: Path) -> Path:
    """``project``'s wheel in ``out`` (emptied first), built from its sdist (as a release
    is: nothing outside the sdist reaches it, and no build folder is left in the
    checkout)."""
    shutil.rmtree(out, ignore_errors=True)
    uv = str(Path(sys.executable).parent / "uv")
    _run([uv, "build", "--quiet", "--out-dir", str(out), str(project)])
    (wheel,) = out.glob("*.whl")
    return wheel


def _stamp(*wheels: Path) -> str:
    digest = hashlib.sha256()
    for wheel in wheels:
        with zipfile.ZipFile(wheel) as zipped:  # contents, not the zip's timestamps
            for name in sorted(zipped.namelist()):
                digest.update(name.encode())
                digest.update(zipped.read(name))
    digest.update(CONSTRAINTS.read_bytes())
    digest.update(sys.version.encode())
    return digest.hexdigest()


def _run(command: list[str]) -> None:
    """One step of the build, outside the checkout's import path, timed on stderr."""
    began = time.monotonic()
    run(command, env=isolated_env(), timeout=1800, cwd=REPO_ROOT / "var")
    print(f"{time.monotonic() - began:6.1f} s  {' '.join(command[:4])}", file=sys.stderr)


def main() -> int:
    print(provider_venv().python)
    return 0


if __name__ == "__main__":
    sys.exit(main())
