"""Validation: the Great Expectations suites that decide whether a generation is published.

The suites are data (``expectations/*.json``); the checks that plain GX cannot say are
small custom expectation classes (:mod:`.custom_expectations`); :mod:`.generation_suite`
loads and runs them on the Spark DataFrames of one generation and renders Data Docs.
Great Expectations and Spark are imported inside functions only.
"""
