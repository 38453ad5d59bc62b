"""The CQL rules of ScyllaDB's CDC log, once: what each logged operation does to the
table, as typed mutations (:mod:`.mutations`).

A CDC batch (the log rows of one base mutation: one ``cdc$time``, numbered
``cdc$batch_seq_no`` 0 .. ``cdc$end_of_batch``) becomes the mutation's parts
(:func:`.decode.mutations`), each rule in the module of its operation, as ScyllaDB logs
it (``cdc/log.cc``, docs "CDC log table"):

* :mod:`.row_writes`: an insert writes the row marker and its cells, an update only its
  cells; a column with ``cdc$deleted_<col>`` and no value was set to null; a non-frozen
  collection or user type with ``cdc$deleted_<col>`` was overwritten whole, without it
  its value holds the elements added or the fields set, and
  ``cdc$deleted_elements_<col>`` the elements removed or the fields set to null; a
  static row's change is a row of its own without clustering key;
* :mod:`.deletes`: row, partition and range deletes (a range delete is two rows, its
  start and end bound in clustering order);
* :mod:`.ttl_expiry`: a TTL counts from the write, and an expired write is the tombstones
  its cells have become;
* pre- and post-images are not changes.

Two readers turn mutations into something else, and resolve differently:

* **the sink** (:mod:`cdcgen.core.sink_statements`) writes each mutation as CQL at its
  original write time, so *the database* resolves the rest: last writer wins per cell
  by write time (ScyllaDB's tie rules included), tombstones of rows, partitions and
  ranges shadow only older cells, a collection's elements and a user type's fields are
  cells of their own, static cells belong to the partition; only the TTL left is the
  sink's to compute (expired writes become their tombstones, :func:`.ttl_expiry.expired`);
* **a reader of the lake** (a mirror of the table) has no database to do that: it
  resolves each of those rules itself, from the same mutations: which version of a
  cell wins (:mod:`.reconcile`, ScyllaDB's order) and what a partition holds and reads
  as once they are folded into it (:mod:`cdcgen.core.mirror_fold`).
"""
