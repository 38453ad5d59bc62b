"""Where a Spark session this process starts runs, and which Spark and JDK it starts.

Read from the environment like every setting (:mod:`cdcgen.env_settings`), so that the
jobs, the Connect server and the class archive agree on one reading of each variable
and the configuration reference lists them. Under spark-submit the submit command
decides the master (the ``cdcgen_spark`` connection), not these settings.
"""

from __future__ import annotations

from pathlib import Path

from cdcgen.env_settings import EnvSettings, env

#: A session of its own on this machine's cores, when nothing else is configured.
DEFAULT_MASTER = "local[2]"


class SparkSettings(EnvSettings):
    master: str = env("CDCGEN_SPARK_MASTER", DEFAULT_MASTER)
    """The master of a Spark session started outside spark-submit: a job or replication
    run started by hand, the Connect server (``local[N]``, ``spark://``, ``k8s://``)."""
    remote: str | None = env("CDCGEN_SPARK_REMOTE", None)
    """The Spark Connect server (``sc://host:port``) a generation's extract and its
    validation run on; unset, each starts a Spark of its own."""
    class_archive: bool = env("CDCGEN_SPARK_CLASS_ARCHIVE", True)
    """Whether a driver JVM maps this machine's class archive when there is one (off:
    every driver loads its classes itself)."""
    spark_home: Path | None = env("SPARK_HOME", None)
    """The Spark whose driver JVMs this machine starts; unset, PySpark's own."""
    java_home: Path | None = env("JAVA_HOME", None)
    """The JDK that runs Spark and compiles the lake's log store; unset, the ``java``
    and ``javac`` on the PATH."""
    gateway_port: int | None = env("PYSPARK_GATEWAY_PORT", None)
    """Set by spark-submit for the Python it starts: a session then takes its master
    from the submit command. Not a setting to give."""
