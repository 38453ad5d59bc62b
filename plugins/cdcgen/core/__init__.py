"""The pure core: tokens, sharding, stream IDs, topology descriptions, the generation timeline.

Nothing in this package performs I/O or imports Airflow, Spark or the database driver's
cluster machinery, so every rule here can be tested exhaustively and reused everywhere.
"""
