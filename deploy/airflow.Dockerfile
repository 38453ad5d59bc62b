# One image for every Airflow service *and* the Spark master/worker of docker-compose.yaml.
#
# Why one image: Spark runs the extract job's Python on the workers, and PySpark
# refuses a worker whose Python minor version differs from the driver's (the
# driver is spark-submit inside the Airflow scheduler).  Building Spark from the
# same image gives both sides Python 3.11, the pinned pyspark 4.1.3 (whose wheel
# carries Spark's jars and `spark-class`) and the cdcgen provider with its
# dependencies, all from the committed constraints.txt.
#
# The provider is installed the way a team installs it into its own Airflow: the wheel
# built from this checkout, then `pip install`; Airflow finds its connection type, hooks,
# operators and report plugin through the package's entry point. Only the DAG files are
# mounted (compose), as a deployment's dags folder.
#
# Build context: the repository root (see docker-compose.yaml).
FROM apache/airflow:3.3.2-python3.11 AS wheel
COPY --chown=airflow:0 pyproject.toml LICENSE README.md /home/airflow/cdcgen/
COPY --chown=airflow:0 plugins/ /home/airflow/cdcgen/plugins/
RUN pip wheel --no-cache-dir --no-deps --wheel-dir /home/airflow/dist /home/airflow/cdcgen

FROM apache/airflow:3.3.2-python3.11

USER root
# Spark 4 needs Java 17 or 21 (a JDK: set-up compiles the lake's log store for S3,
# cdcgen.spark_runtime.log_store); procps gives Spark's scripts `ps`.
RUN apt-get update \
 && apt-get install -y --no-install-recommends openjdk-17-jdk-headless procps \
 && apt-get clean \
 && rm -rf /var/lib/apt/lists/* \
 && ln -s "$(dirname "$(dirname "$(readlink -f "$(command -v java)")")")" /usr/lib/jvm/default-java-17
ENV JAVA_HOME=/usr/lib/jvm/default-java-17

RUN mkdir -p /opt/cdcgen/dags /opt/cdcgen/lake /opt/cdcgen/reports && chown -R airflow:0 /opt/cdcgen
USER airflow
COPY --chown=airflow:0 constraints.txt /opt/cdcgen/
COPY --from=wheel /home/airflow/dist/ /home/airflow/dist/
# The provider with the stack it runs on (the Spark and Cassandra providers, GX, the
# metadata database's sync and async drivers), pinned by the constraints. Then Delta
# Lake's and S3A's jars and the lake's log store into PySpark's jars/
# (cdcgen.spark_runtime.install), for Spark drivers and the master and worker alike, and the
# vendored scripts and styles of GX's Data Docs (cdcgen.validation.docs_assets): the
# provider's two post-install steps (docs/install.md).
RUN pip install --no-cache-dir -c /opt/cdcgen/constraints.txt \
      "$(ls /home/airflow/dist/cdcgen-*.whl)[stack]" "psycopg2-binary==2.9.13" "asyncpg==0.32.0" \
 && pip check \
 && python -m cdcgen.spark_runtime.install --no-cache \
 && python -m cdcgen.validation.docs_assets

WORKDIR /opt/cdcgen
