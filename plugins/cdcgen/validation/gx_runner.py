"""Run loaded suites with Great Expectations and render Data Docs.

One ephemeral (in-memory) Data Context per validation: nothing to clean up, nothing
shared between concurrent tasks, no network. It has a single filesystem Data Docs site
whose base directory is the generation's report directory, so the static HTML lands in
``<report_dir>/<generation>/index.html``. Analytics and progress bars are off.

The batches come from one of two sources: Spark DataFrames (:class:`SparkFrames`, the
change suites: ``add_spark(...).add_dataframe_asset(...)``) or the tables of a SQLite
file (:class:`SqliteTables`, the generation suites on their flagged batches:
``add_sqlite(...).add_table_asset(...)``, in-process). Custom expectations run as SQL on
either. This is the one module that reads GX's result objects: each becomes a
:class:`~cdcgen.validation.results.CheckOutcome`, whichever suite family ran.
"""

from __future__ import annotations

import importlib
import importlib.util
import logging
import os
import re
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from cdcgen.progress import Progress
from cdcgen.validation.docs_assets import vendor_data_docs
from cdcgen.validation.docs_folder import replace_docs_folder
from cdcgen.validation.errors import SuiteError
from cdcgen.validation.results import CheckOutcome, Row
from cdcgen.validation.suites import SuiteSpec, check_name

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

log = logging.getLogger(__name__)

SITE_NAME = "cdcgen"
DATASOURCE_NAME = "cdcgen_generation"
#: A GX batch definition and the batch parameters to run it with.
Batch = tuple[Any, dict[str, Any] | None]


class BatchSource(Protocol):
    """Where the named batches come from: adds a datasource to a GX context."""

    def batches(self, context: Any, names: Sequence[str]) -> dict[str, Batch]: ...


@dataclass(frozen=True)
class SparkFrames:
    """Batches that are Spark DataFrames, by batch name."""

    frames: Mapping[str, DataFrame]

    def batches(self, context: Any, names: Sequence[str]) -> dict[str, Batch]:
        datasource = context.data_sources.add_spark(name=DATASOURCE_NAME)
        return {
            name: (
                datasource.add_dataframe_asset(name=name).add_batch_definition_whole_dataframe(
                    f"{name}_whole"
                ),
                {"dataframe": self.frames[name]},
            )
            for name in names
        }


@dataclass(frozen=True)
class SqliteTables:
    """Batches that are the tables of a SQLite file, each named as its batch."""

    database: Path

    def batches(self, context: Any, names: Sequence[str]) -> dict[str, Batch]:
        datasource = context.data_sources.add_sqlite(
            name=DATASOURCE_NAME, connection_string=f"sqlite:///{self.database}"
        )
        return {
            name: (
                datasource.add_table_asset(
                    name=name, table_name=name
                ).add_batch_definition_whole_table(f"{name}_whole"),
                None,
            )
            for name in names
        }


_import_lock = threading.Lock()
_gx_import: threading.Thread | None = None


def start_gx_import() -> None:
    """Begin importing GX in a background thread; :func:`run_suites` waits for it.

    Importing GX costs seconds of pure Python (its expectation modules pull in scipy,
    sqlalchemy and marshmallow) that a validation would otherwise spend after flagging
    its rows. Started before the flag pass, the import runs while this thread mostly
    waits on the JVM, pyarrow or SQLite. pandas, which both sides import, is imported
    here first so the two threads never import the same modules at once.
    """
    global _gx_import
    with _import_lock:
        if _gx_import is not None:
            return
        if "great_expectations.data_context" in sys.modules:
            log.info("Great Expectations was imported before this process started validating")
            return
        importlib.import_module("pandas")  # see above

        _gx_import = threading.Thread(target=_import_quietly, name="cdcgen-gx-import", daemon=True)
        _gx_import.start()


def _import_quietly() -> None:
    try:
        import_gx()
    except Exception:  # the import in run_suites raises it again where it matters
        log.debug("background import of Great Expectations failed", exc_info=True)


def import_gx() -> Any:
    """GX and the modules that register this project's expectations with it."""
    os.environ.setdefault("GX_ANALYTICS_ENABLED", "false")
    _load_when_used("scipy.stats")
    import great_expectations as gx
    import great_expectations.data_context.types.base

    # Importing the expectation modules registers their types with GX (by name).
    from cdcgen.validation import change_expectations, generation_expectations  # noqa: F401

    return gx


def _load_when_used(name: str) -> None:
    """Make module ``name`` load on its first attribute access instead of on import.

    GX's KL-divergence expectation imports ``scipy.stats`` (and with it scipy.spatial
    and scipy.linalg) when GX is imported, a large part of GX's import time, for
    an expectation no suite here uses. Deferred, it loads only if something uses it.
    """
    if name in sys.modules:
        return
    parent_name, _, child = name.rpartition(".")
    parent = importlib.import_module(parent_name)
    spec = importlib.util.find_spec(name)
    if spec is None or spec.loader is None:
        return
    spec.loader = importlib.util.LazyLoader(spec.loader)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    setattr(parent, child, module)
    spec.loader.exec_module(module)


def run_suites(
    suites: Sequence[SuiteSpec],
    source: BatchSource,
    parameters: Mapping[str, int],
    report_dir: Path,
    run_name: str,
    *,
    max_samples: int | None = None,
) -> tuple[list[CheckOutcome], Path]:
    """Validate each suite on its batch from ``source``; return outcomes and the docs index.

    Each outcome keeps at most ``max_samples`` offending rows (all GX returned: None).
    """
    with _import_lock:
        started_import = _gx_import
    if started_import is not None:
        started_import.join()
    gx = import_gx()
    from great_expectations.core.run_identifier import RunIdentifier
    from great_expectations.data_context.types.base import (
        DataContextConfig,
        InMemoryStoreBackendDefaults,
        ProgressBarsConfig,
    )

    report_dir = report_dir.resolve()  # GX's site store refuses a relative folder
    replace_docs_folder(report_dir)  # a re-validation replaces the generation's old Data Docs
    context = gx.get_context(
        mode="ephemeral",
        project_config=DataContextConfig(
            store_backend_defaults=InMemoryStoreBackendDefaults(init_temp_docs_sites=False),
            data_docs_sites={
                SITE_NAME: {
                    "class_name": "SiteBuilder",
                    "show_how_to_buttons": False,
                    "store_backend": {
                        "class_name": "TupleFilesystemStoreBackend",
                        "base_directory": str(report_dir),
                    },
                    "site_index_builder": {"class_name": "DefaultSiteIndexBuilder"},
                }
            },
            analytics_enabled=False,
            progress_bars=ProgressBarsConfig(globally=False, metric_calculations=False),
        ),
    )
    batches = source.batches(context, sorted({suite.batch for suite in suites}))
    # The run name becomes a directory of the site: keep it to URL-safe characters.
    run_id = RunIdentifier(run_name=re.sub(r"[^A-Za-z0-9._=-]+", "_", run_name).strip("_"))
    outcomes: list[CheckOutcome] = []
    checks = sum(len(spec.expectations) for spec in suites)
    progress = Progress(total=checks, unit="checks", log=log.info, every=0.0, label=run_name)
    for spec in suites:
        suite = gx.ExpectationSuite(
            name=spec.name,
            expectations=[dict(e.config) for e in spec.expectations],
            meta=dict(spec.meta),
        )
        if len(suite.expectations) != len(spec.expectations):
            # GX logs and drops an expectation it cannot build; a dropped check must not pass.
            loaded = {e.expectation_type for e in suite.expectations}
            lost = [e.type for e in spec.expectations if e.type not in loaded]
            raise SuiteError(f"suite {spec.path}: GX could not build {lost} (see the log)")
        suite = context.suites.add(suite)
        batch_definition, batch_parameters = batches[spec.batch]
        definition = context.validation_definitions.add(
            gx.ValidationDefinition(name=spec.name, data=batch_definition, suite=suite)
        )
        started = time.monotonic()
        result = definition.run(
            batch_parameters=batch_parameters,
            expectation_parameters=dict(parameters),
            result_format={"result_format": "COMPLETE", "partial_unexpected_count": 10},
            run_id=run_id,
        )
        log.info("suite %s: %.1f s", spec.name, time.monotonic() - started)
        progress.advance(len(spec.expectations))
        for item in result.results:
            config = item.expectation_config
            if config is None:  # GX always sets it for suite runs; never let a result vanish
                raise SuiteError(f"suite {spec.name}: a result without its expectation")
            info = item.exception_info or {}
            raised = bool(info.get("raised_exception"))
            observed, samples, counts_rows = _observed(dict(item.result or {}), max_samples)
            outcomes.append(
                CheckOutcome(
                    suite=spec.name,
                    expectation=config.type,
                    check=check_name(config.type, (config.meta or {}).get("check")),
                    passed=bool(item.success) and not raised,
                    observed=observed,
                    samples=samples,
                    error=str(info.get("exception_message")) if raised else None,
                    counts_rows=counts_rows,
                )
            )
    started = time.monotonic()
    context.build_data_docs(site_names=[SITE_NAME])
    vendor_data_docs(report_dir)  # nothing loaded from a CDN
    log.info("Data Docs built in %.1f s: %s", time.monotonic() - started, report_dir)
    return outcomes, report_dir / "index.html"


def _observed(
    result: Mapping[str, Any], max_samples: int | None
) -> tuple[object, tuple[Row, ...], bool]:
    """What GX observed: the offending rows (a custom rule's query) or the unexpected
    values (a built-in column expectation), their count, and whether it counts rows."""
    details = result.get("details") or {}
    rows = details.get("unexpected_rows")
    counts_rows = rows is not None or "unexpected_count" in result
    if rows is None:
        rows = [{"value": value} for value in result.get("partial_unexpected_list") or []]
    samples = tuple(_plain(row) for row in rows[:max_samples])
    return result.get("observed_value", result.get("unexpected_count")), samples, counts_rows


def _plain(row: Mapping[str, Any]) -> Row:
    """A row JSON and a page can carry: timestamps as ISO text."""
    return {k: (v.isoformat() if hasattr(v, "isoformat") else v) for k, v in row.items()}
