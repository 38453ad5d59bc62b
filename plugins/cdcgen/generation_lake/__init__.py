"""Extract: a generation as a flat, columnar table (one row per stream) and its lake dataset.

The pure half (:mod:`.description_columns`, :mod:`.streams_table`) needs only numpy and
pyarrow; :mod:`.spark_extract` turns the table into a Spark DataFrame and a Parquet
partition. Spark is imported inside functions so that importing this package stays cheap.
"""
