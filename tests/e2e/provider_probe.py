"""Run by the provider's own virtualenv (``python provider_probe.py``): what its Airflow
found of cdcgen, and where the installed package's files and defaults are, as one JSON
object on stdout. Nothing of the checkout is importable there."""

from __future__ import annotations

import json
import sys
from pathlib import Path


def main() -> int:
    from airflow.providers_manager import ProvidersManager

    import cdcgen
    from cdcgen.airflow.provider import get_provider_info
    from cdcgen.airflow.spark_jobs import CHANGES_EXTRACT, GENERATION_EXTRACT, REPLICATION_BOOTSTRAP
    from cdcgen.config import PipelineConfig
    from cdcgen.validation.suites import SuiteSettings

    manager = ProvidersManager()
    prefix = "extra__cdcgen__"
    widgets = manager.connection_form_widgets
    hook = manager.hooks["cdcgen"]
    (connection_type,) = get_provider_info()["connection-types"]
    suites = SuiteSettings.from_env({}).expectations_dir
    defaults = PipelineConfig.from_env({})
    found = {
        "package": str(Path(cdcgen.__file__).parent),
        "provider": manager.providers["cdcgen"].version if "cdcgen" in manager.providers else None,
        "form": {
            name.removeprefix(prefix): widget.field["description"]
            for name, widget in widgets.items()
            if name.startswith(prefix)
        },
        "declared": {
            name: field["description"] for name, field in connection_type["conn-fields"].items()
        },
        "field_behaviours": manager.field_behaviours["cdcgen"],
        "hook": hook.hook_class_name if hook else None,
        "testable": bool(hook and hook.connection_testable),
        "suites_dir": str(suites),
        "suites": sorted(path.name for path in suites.glob("*.json")),
        "applications": [
            job.application for job in (GENERATION_EXTRACT, CHANGES_EXTRACT, REPLICATION_BOOTSTRAP)
        ],
        "lake_path": str(defaults.lake_path),
        "report_dir": str(defaults.report_dir),
    }
    print(json.dumps(found))
    return 0


if __name__ == "__main__":
    sys.exit(main())
