"""The changes flow: extract closed windows of every CDC log into the lake, check them.

Layered like the generations flow:

* pure rules in :mod:`cdcgen.core`: windows and their planning (:mod:`~cdcgen.core.windows`),
  the consistency watermark, the log table record, the expected stream of a change;
* ports in :mod:`cdcgen.ports` (generation source, clock reader, checkpoint store,
  change-log reader, changes lake) and their cassandra-driver adapters in
  :mod:`cdcgen.adapters` (:mod:`~cdcgen.adapters.checkpoints`,
  :mod:`~cdcgen.adapters.change_log`, :mod:`~cdcgen.adapters.stream_routing`, ...);
* the Spark edge in :mod:`cdcgen.spark_runtime`: one configuration per job kind, and the one
  fan-out of per-stream work over Spark tasks;
* here: :mod:`.changes_run`, the orchestrator of one run over the ports; :mod:`.changes_lake`, the
  changes lake (layout in :mod:`.layout`, the Spark read task in :mod:`.read_task`,
  rows as Arrow in :mod:`.columns`); :mod:`.row_frames` and :mod:`.row_validation`, the
  row checks' frames and their run; :mod:`.result`, what a run did; :mod:`.job`, the
  one place the adapters are built, which ``spark/extract_changes.py`` calls.

How the ``cdc_changes`` DAG uses it, per table and data interval:

1. wait (deferrable) until every node's clock is past the interval end + leeway +
   confidence window (:func:`cdcgen.core.clocks.window_closes_at`);
2. run ``spark/extract_changes.py --table ks.t --interval-start .. --interval-end ..``
   (the configuration comes from the ``CDCGEN_*`` environment); ``--mode backfill``
   for backfills;
3. treat exit 3 (row checks failed, :class:`~cdcgen.core.errors.DataExpired`, another
   terminal error) as terminal, exit 4
   (:class:`~cdcgen.adapters.errors.TransientReadError`, no node answered) as
   retryable (:class:`~cdcgen.core.errors.ExitCode`).

Spark, Great Expectations and ``cassandra.cluster`` are imported inside functions only,
so the Airflow edge can import the plan and summary helpers cheaply.
"""
