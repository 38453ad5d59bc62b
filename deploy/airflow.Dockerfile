# One image for every Airflow service *and* the Spark master/worker of docker-compose.yaml.
#
# Why one image: Spark runs the extract job's Python on the workers, and PySpark
# refuses a worker whose Python minor version differs from the driver's (the
# driver is spark-submit inside the Airflow scheduler).  Building Spark from the
# same image gives both sides Python 3.11, the pinned pyspark 4.1.3 (whose wheel
# carries Spark's jars and `spark-class`) and the cdcgen package with its
# dependencies, all from the committed constraints.txt.
#
# Build context: the repository root (see docker-compose.yaml).
FROM apache/airflow:3.3.2-python3.11

USER root
# Spark 4 needs Java 17 or 21 (a JDK: set-up compiles the lake's log store for S3,
# cdcgen.spark.log_store); procps gives Spark's scripts `ps`.
RUN apt-get update \
 && apt-get install -y --no-install-recommends openjdk-17-jdk-headless procps \
 && apt-get clean \
 && rm -rf /var/lib/apt/lists/* \
 && ln -s "$(dirname "$(dirname "$(readlink -f "$(command -v java)")")")" /usr/lib/jvm/default-java-17
ENV JAVA_HOME=/usr/lib/jvm/default-java-17

# The repository lives at /opt/cdcgen (cdcgen.config.REPO_ROOT resolves to it);
# compose bind-mounts dags/, plugins/, spark/ and expectations/ over these copies,
# so code edits need no rebuild, while the dependencies below come from the image.
RUN mkdir -p /opt/cdcgen/lake /opt/cdcgen/reports && chown -R airflow:0 /opt/cdcgen
USER airflow
COPY --chown=airflow:0 pyproject.toml constraints.txt README.m[d] /opt/cdcgen/
COPY --chown=airflow:0 plugins/ /opt/cdcgen/plugins/
COPY --chown=airflow:0 dags/ /opt/cdcgen/dags/
COPY --chown=airflow:0 spark/ /opt/cdcgen/spark/
COPY --chown=airflow:0 expectations/ /opt/cdcgen/expectations/
# Editable: the import path is /opt/cdcgen/plugins, i.e. the bind-mounted sources.
# psycopg2-binary and asyncpg are the metadata database's sync and async drivers
# (the base image has them; pinned here so the constraints cannot drop them).
# Then Delta Lake's and S3A's jars and the lake's log store into PySpark's jars/
# (cdcgen.spark.install), for Spark drivers and the master and worker alike, and the
# vendored scripts and styles of GX's Data Docs (cdcgen.validation.docs_assets).
RUN pip install --no-cache-dir -c /opt/cdcgen/constraints.txt \
      -e "/opt/cdcgen[stack]" "psycopg2-binary==2.9.13" "asyncpg==0.32.0" \
 && pip check \
 && python -m cdcgen.spark.install \
 && python -m cdcgen.validation.docs_assets

WORKDIR /opt/cdcgen
