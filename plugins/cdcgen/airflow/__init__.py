"""Airflow-facing shells around the pipeline: hook, trigger, sensor, local Airflow home.

One concept per module, as Airflow's providers split them: ``hooks`` turn a
connection into a client, ``triggers`` own waiting (they run in the triggerer,
which imports them from this installed package, never from the DAG bundle),
``sensors`` own task behaviour, ``home`` builds the Airflow home used by
development, tests and the demo.  Task logic lives in :mod:`cdcgen.pipeline`.
"""
