"""Which Spark masters a job may be submitted to: any, with its driver in client mode.

SparkSubmitHook hands its ``env_vars`` on per master: to YARN as ``--conf
spark.yarn.appMasterEnv.K=V``, to Kubernetes as ``--conf spark.kubernetes.driverEnv.K=V``.
Both land in spark-submit's argv, which ``ps`` and ``/proc/<pid>/cmdline`` show to every
user of the machine (the hook's own log masks only keys naming a secret or a password,
so ``AWS_SESSION_TOKEN`` shows there too). On Kubernetes in client mode they reach
nobody either: the driver is spark-submit's own JVM, which only the process environment
reaches, so the job would start without its lake path and its password file.

So the job's variables never go through ``env_vars``: they are put into the environment
spark-submit inherits (:func:`cdcgen.airflow.spark_submit.submit_environment`), which is
the driver's own when the driver runs in spark-submit's process. That is client mode, on
every master: local, standalone, YARN and Kubernetes. A driver that runs elsewhere
(cluster mode) cannot be served: its variables could only travel as confs on argv, and
the password file and the result file the task reads back exist on this machine only.
Cluster mode is refused before anything is submitted, naming the connection, its master
and what to set instead; ``spark.submit.deployMode`` is pinned to client so that no
``spark-defaults.conf`` on the Airflow worker turns it on behind the connection's back.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

from cdcgen.airflow.errors import SparkMasterRefused

if TYPE_CHECKING:
    from airflow.providers.apache.spark.hooks.spark_submit import SparkSubmitHook

#: Spark's own setting for where the driver runs; ``--deploy-mode`` overrides it.
DEPLOY_MODE_CONF = "spark.submit.deployMode"
CLIENT = "client"
#: What SparkSubmitHook needs for a master it reads as Kubernetes.
KUBERNETES_PROVIDER = "apache-airflow-providers-cncf-kubernetes"

_ADVICE = (
    "submit in client mode (leave deploy-mode out of the connection's extras or set it "
    "to client): the driver then runs in the task and gets its settings and credentials "
    "from spark-submit's environment, never its command line"
)


def client_conf(conf: Mapping[str, str]) -> dict[str, str]:
    """``conf`` with the driver pinned to spark-submit's process, or refused if it asks
    for another place."""
    asked = conf.get(DEPLOY_MODE_CONF, CLIENT)
    if asked != CLIENT:
        raise SparkMasterRefused(
            f"the job's Spark conf sets {DEPLOY_MODE_CONF}={asked!r}; {_ADVICE}"
        )
    return {**conf, DEPLOY_MODE_CONF: CLIENT}


def client_mode_hook(build: Callable[[], SparkSubmitHook], conn_id: str) -> SparkSubmitHook:
    """The hook ``build`` makes, once its connection is known to keep the driver in
    spark-submit's process; else :class:`SparkMasterRefused` naming the master."""
    try:
        hook = build()
    except (NameError, RuntimeError) as exc:
        # The hook refuses a master it reads as Kubernetes without the provider's client
        # (provider 6.3.4 with a NameError on its unbound import); say what to install.
        if "kube" not in str(exc):
            raise
        raise SparkMasterRefused(
            f"Spark connection {conn_id!r}: SparkSubmitHook reads its master as Kubernetes "
            f"(the URL contains 'k8s') and then needs {KUBERNETES_PROVIDER}, which is not "
            "installed where this task runs: install it beside Airflow, or correct the master"
        ) from exc
    connection = hook._connection  # what the hook puts on the command line
    mode = connection["deploy_mode"]
    if mode not in (None, CLIENT):
        raise SparkMasterRefused(
            f"Spark connection {conn_id!r} (master {connection['master']}) asks for deploy "
            f"mode {mode!r}: the driver would run off this machine, where the job's settings "
            "and credentials could only travel on spark-submit's command line (readable by "
            f"ps) and its password file and result file do not exist; {_ADVICE}"
        )
    return hook
