"""The changes pipeline: extract closed windows of every CDC log into the lake.

One concept per module, pure ones first:

* :mod:`.windows` plans which ``[start, end)`` of which streams to read (pure);
* :mod:`.routing` finds each stream's replicas from the token inside its ID;
* :mod:`.stream_reader` reads one stream's window with paging and retries;
* :mod:`.checkpoints` keeps per-stream checkpoints and the table watermark;
* :mod:`.layout` names the lake's partitions and lists what is already there;
* :mod:`.log_table` describes a log table (columns, key, TTL, partitioner);
* :mod:`.columns` turns driver rows into Arrow batches of the lake schema;
* :mod:`.generations` loads the spans (vnode generations or tablet stream sets);
* :mod:`.extract` runs the reads on Spark and writes Parquet;
* :mod:`.row_checks` validates the written rows with Great Expectations;
* :mod:`.report` turns a run into a report-site record; :mod:`.job` chains it all.

How the ``cdc_changes`` DAG uses it, per table (``list_cdc_tables``) and data interval:

1. wait (deferrable) until every node's clock (:class:`cdcgen.ports.ClockReader`) is at
   or past :func:`.job.window_close_time` of the interval end
   (:func:`.windows.clocks_past` says why not yet);
2. run ``spark/extract_changes.py --table ks.t --interval-start .. --interval-end ..``
   (or :func:`.job.run_changes` in-process); ``--mode backfill`` for backfills;
3. treat exit 2 / :class:`.row_checks.ChangesInvalid` and exit 3 /
   :class:`.windows.DataExpired` as terminal, exit 4 /
   :class:`.stream_reader.TransientReadError` as retryable.

Nothing here imports Spark, pandas, Great Expectations or ``cassandra.cluster`` at
module level: DAG files import this package while Airflow parses them.
"""
