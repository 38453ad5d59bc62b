"""cdcgen's development harness: everything that stands in for production, kept apart.

* :mod:`.cassandra`: a real Apache Cassandra 5 from Maven jars (one node or three);
* :mod:`.emulator`: ScyllaDB's CDC side played inside that Cassandra (generations in
  every source mode, CDC log rows, node clocks, faults);
* :mod:`.sandbox`: the pipeline configuration that points at the emulator;
* :mod:`.airflow_home`, :mod:`.dags_test`, :mod:`.airflow_cli`: a local Airflow home and
  ``airflow dags test`` (Airflow's CLI, ended without the interpreter's teardown);
* :mod:`.devstack`: the full Airflow stack on PostgreSQL, with a headless browser;
* :mod:`.demo`: ``make demo``;
* :mod:`.cli`: ``cdcgen sandbox ...`` (plugged into the product's CLI by entry point).

It depends on the product (:mod:`cdcgen`); the product never imports it. The product
finds the two things it lends (the ``sandbox`` clock source and the ``sandbox`` CLI
group) through the entry points declared in ``harness/pyproject.toml``.
"""
