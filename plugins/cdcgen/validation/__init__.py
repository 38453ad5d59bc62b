"""Validation: the Great Expectations suites that gate what the pipeline hands on.

Two gates, one way of doing it. The suites are data (``expectations/*.json``, loaded by
:mod:`.suites`); the rules plain GX cannot say are small expectation classes, one per
rule (:mod:`.generation_expectations`, :mod:`.change_expectations`); :mod:`.gx_runner`
runs suites on Spark DataFrames and renders Data Docs; both gates return the one result
model of :mod:`.results`:

* :mod:`.generation_suite`: a generation, before it is published;
* :mod:`.change_rows`: the rows a changes run wrote (frames prepared by
  :mod:`cdcgen.changes.row_frames`), with the run's checks page.

Great Expectations and Spark are imported inside functions only.
"""
