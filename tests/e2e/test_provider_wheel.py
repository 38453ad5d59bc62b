"""The provider as a team installs it: the wheel built from the checkout, installed into a
virtualenv that had only Airflow and the Spark provider (:mod:`cdcgen_dev.provider_venv`).

Airflow finds it there through its entry points alone: ``airflow providers list``, the
connection form from ``get_provider_info`` through Airflow's own provider manager, the
report plugin in ``airflow plugins``; the Spark jobs, the suites and every default path
come from the installed package, none from the checkout. The three DAGs run from that
virtualenv against the sandbox in ``test_demo.py`` (its raft case, the one that
replicates, runs them with that Airflow).
"""

from __future__ import annotations

import json
import subprocess
import zipfile
from importlib.metadata import version
from pathlib import Path
from typing import Any

import pytest

from cdcgen.airflow.connections import PASS_THROUGH_EXTRAS
from cdcgen.airflow.hooks import EXTRA_SETTINGS
from cdcgen_dev.airflow_home import write_config
from cdcgen_dev.isolation import isolated_env
from cdcgen_dev.paths import REPO_ROOT
from cdcgen_dev.provider_venv import ProviderVenv

pytestmark = [pytest.mark.e2e]

PROBE = Path(__file__).with_name("provider_probe.py")


@pytest.fixture(scope="module")
def airflow_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    home = tmp_path_factory.mktemp("provider-home")
    write_config(home)
    return home


def in_venv(venv: ProviderVenv, home: Path, *command: str) -> str:
    done = subprocess.run(
        command,
        cwd=home,  # nothing of the checkout on the import path, not even the cwd
        env={**isolated_env(), "AIRFLOW_HOME": str(home), "NO_COLOR": "1"},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, f"{command} failed:\n{done.stdout[-2000:]}\n{done.stderr[-4000:]}"
    return done.stdout


def test_the_wheel_holds_the_jobs_the_suites_the_plugin_and_the_license(
    provider_virtualenv: ProviderVenv,
) -> None:
    with zipfile.ZipFile(provider_virtualenv.wheel) as wheel:
        names = set(wheel.namelist())
        (entry_points,) = [n for n in names if n.endswith(".dist-info/entry_points.txt")]
        entries = wheel.read(entry_points).decode()
        (metadata,) = [n for n in names if n.endswith(".dist-info/METADATA")]
        requires = [  # the base dependencies, not the project's own extras
            line
            for line in wheel.read(metadata).decode().splitlines()
            if line.startswith("Requires-Dist:") and "extra ==" not in line
        ]
    jobs = {f"cdcgen/jobs/{path.name}" for path in (REPO_ROOT / "spark").glob("*.py")}
    suites = {
        f"cdcgen/validation/expectations/{path.name}"
        for path in (REPO_ROOT / "expectations").glob("*.json")
    }
    assert jobs and suites and jobs | suites <= names
    assert "cdcgen/airflow/reports_plugin.py" in names
    assert any(name.endswith(".dist-info/licenses/LICENSE") for name in names)
    assert "cdcgen.airflow.provider:get_provider_info" in entries
    assert "cdcgen.airflow.reports_plugin:CdcgenReportsPlugin" in entries
    # Ranges a deployment's resolver can meet; the exact versions are constraints.txt's.
    assert requires and not [line for line in requires if "==" in line], requires


def test_airflow_lists_the_provider_and_loads_its_report_plugin(
    provider_virtualenv: ProviderVenv, airflow_home: Path
) -> None:
    airflow = str(provider_virtualenv.airflow)
    providers = json.loads(
        in_venv(provider_virtualenv, airflow_home, airflow, "providers", "list", "-o", "json")
    )
    (cdcgen,) = [p for p in providers if p["package_name"] == "cdcgen"]
    assert cdcgen["version"] == version("cdcgen")
    plugins = json.loads(
        in_venv(provider_virtualenv, airflow_home, airflow, "plugins", "-o", "json")
    )
    (reports,) = [p for p in plugins if p["name"] == "cdcgen_reports"]
    assert {view["name"] for view in reports["external_views"]} == {"CDC reports", "CDC report"}


def test_the_connection_form_the_jobs_the_suites_and_the_defaults_come_from_the_package(
    provider_virtualenv: ProviderVenv, airflow_home: Path
) -> None:
    python = str(provider_virtualenv.python)
    output = in_venv(provider_virtualenv, airflow_home, python, "-I", str(PROBE))
    found: dict[str, Any] = json.loads(output.splitlines()[-1])  # Airflow logs to stdout first
    package = Path(found["package"])
    assert package.is_relative_to(provider_virtualenv.root), package
    assert found["provider"] == version("cdcgen")
    # The form Airflow shows is get_provider_info's, field for field and word for word.
    assert found["form"] == found["declared"]
    assert set(found["form"]) == set(EXTRA_SETTINGS) | set(PASS_THROUGH_EXTRAS)
    assert found["field_behaviours"]["hidden_fields"] == ["schema"]
    assert found["hook"] == "cdcgen.airflow.hooks.CdcSourceHook" and found["testable"]
    # The package's own files, wherever it is installed.
    assert Path(found["suites_dir"]).is_relative_to(package)
    assert found["suites"] == sorted(p.name for p in (REPO_ROOT / "expectations").glob("*.json"))
    for application in found["applications"]:
        assert Path(application).is_relative_to(package / "jobs"), application
    # No default derived from where the package lies: the user's data folder.
    for path in (found["lake_path"], found["report_dir"]):
        assert not Path(path).is_relative_to(provider_virtualenv.root), path
        assert not Path(path).is_relative_to(REPO_ROOT), path
        assert Path(path).is_relative_to(Path.home() / ".local" / "share" / "cdcgen"), path
