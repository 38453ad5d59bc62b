"""The Spark jobs the DAGs submit.

Each module runs as a script: the DAGs submit the module's own file, found in the
installed package (:func:`cdcgen.airflow.spark_jobs.job_file`), and
``python -m cdcgen.jobs.<job>`` runs it without spark-submit. ``spark/*.py`` in the
repository are the same entry points for ``spark-submit`` from a checkout.

Each takes the typed configuration from the ``CDCGEN_*`` environment and its own
arguments (which generation, which table and interval), and prints its result as JSON.
"""
