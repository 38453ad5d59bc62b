"""``make demo``: the whole pipeline once, on the embedded sandbox, then proof it worked.

1. lease the local Cassandra (started if none runs, stopped again if nobody else
   uses it by the end);
2. prepare the Airflow home ``var/airflow``;
3. emulate a ScyllaDB cluster in the chosen source mode (``--mode raft|gossip|v1|
   tablets``, :mod:`.modes`) under the ``demo_`` keyspace prefix (reset first),
   with a workload on the CDC table ``demo_shop.orders``;
4. run ``airflow dags test cdc_generations``: detect, wait for the node clocks
   (deferred to a trigger), extract with Spark, validate with Great Expectations,
   publish to ``demo_system_distributed`` (in V1 mode: then the 4.3 -> 4.4
   rewrite and a forced run from the V2 tables);
5. read the published tables back and compare them with the source;
6. run ``airflow dags test cdc_changes``: wait until the window is closed on every
   node, extract every change stream by stream into the lake, check the rows (GX),
   then count the lake against the source's log table.

It prints what happens and, as its **last line**, one JSON object with
``source_mode``, ``cdc_table``, ``generations_published``, ``streams_published``,
``validation``, ``report`` (an ``index.html``), ``changes_rows``, ``colocation`` and
more. When a part of the pipeline is missing or a step fails, it says which and
exits non-zero instead of printing numbers it did not measure.

One demo at a time (:mod:`.lock`): a second one refuses at once naming the first's
pid, or queues behind it with ``--wait``. Nothing it started outlives it
(:mod:`.processes`). The command line is :mod:`.cli`.
"""

from cdcgen_dev.demo.cli import main

__all__ = ["main"]
