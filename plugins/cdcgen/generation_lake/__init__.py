"""The generations lake: each generation as a flat, columnar table (one row per stream),
its Delta tables and documents (:mod:`.lake_tables`, :mod:`.documents`), its writes and
the migration of older lakes.

The pure half (:mod:`.description_columns`, :mod:`.streams_table`) needs only numpy and
pyarrow; :mod:`.spark_extract` turns the table into a Spark DataFrame and a Parquet
partition. Spark is imported inside functions so that importing this package stays cheap.
"""
