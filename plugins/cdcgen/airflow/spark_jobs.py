"""The Spark jobs the DAGs submit: entry point, configuration and name of each kind.

``SparkSubmitOperator`` gets its application and ``conf`` from here at parse time (no I/O:
paths and dictionaries only). The application is the job module's own file, wherever the
package is installed: each module in :mod:`cdcgen.jobs` runs as a script
(``spark-submit <its file>``, or ``python -m cdcgen.jobs.<job>``). The configuration is
the job kind's one
(:mod:`cdcgen.spark_runtime.session`), and each task hands the job its typed configuration through
the environment (:func:`job_env`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from importlib.util import find_spec

from cdcgen.airflow.errors import JobFileMissing
from cdcgen.env_settings import EnvSettings
from cdcgen.spark_runtime.session import JobKind, submit_conf, submit_env


@dataclass(frozen=True)
class SparkJob:
    application: str
    conf: Mapping[str, str]
    name: str


def job_file(module: str) -> str:
    """The file of the job module ``module``, found without importing it (a DAG file parses
    without Spark)."""
    spec = find_spec(module)
    if spec is None or spec.origin is None or not spec.origin.endswith(".py"):
        found = spec.origin if spec is not None else None
        raise JobFileMissing(f"no source file of the Spark job module {module} (found {found})")
    return spec.origin


GENERATION_EXTRACT = SparkJob(
    application=job_file("cdcgen.jobs.extract_generation"),
    conf=submit_conf(JobKind.GENERATION_EXTRACT),
    name="cdcgen-extract-generation",
)

CHANGES_EXTRACT = SparkJob(
    application=job_file("cdcgen.jobs.extract_changes"),
    conf=submit_conf(JobKind.CHANGES_EXTRACT),
    name="cdcgen-extract-changes",
)

REPLICATION_BOOTSTRAP = SparkJob(
    application=job_file("cdcgen.jobs.replication_bootstrap"),
    conf=submit_conf(JobKind.REPLICATION_COPY),
    name="cdcgen-replication-bootstrap",
)


def job_env(*settings: EnvSettings) -> dict[str, str]:
    """What a submitted job needs in its environment: this Python for Spark's workers, and
    the typed settings as ``CDCGEN_*`` variables (read back with ``from_env``)."""
    env = submit_env()
    for each in settings:
        env.update(each.to_env())
    return env
