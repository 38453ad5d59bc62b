"""The Spark jobs the DAGs submit (``spark/*.py`` are their thin entry points).

Each takes the typed configuration from the ``CDCGEN_*`` environment and its own
arguments (which generation, which table and interval), and prints its result as JSON.
"""
