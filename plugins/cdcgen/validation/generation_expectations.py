"""The generation rules as named Great Expectations expectations.

The row rules of a changes run are their siblings in :mod:`.change_expectations`.

One :class:`UnexpectedRowsExpectation` class per rule of
:mod:`.generation_rules`, made from it: the class name gives the rule its domain name in
the suite JSON, in results and in Data Docs (``expect_stream_token_on_its_shard``
rather than the tenth ``unexpected_rows_expectation``), and its query selects, from the
flagged batch (:mod:`.generation_flags`), the rows carrying the rule's flag, with the columns a
person needs to find them (stream ID hex, entry, shard, token), in row order. GX runs
the query, counts the rows and decides; the rule's condition is shown with the query.

Why here and not in ``expectations/``: GX resolves an expectation ``type`` from suite
JSON through a registry filled when the class is *imported*. The classes must therefore
be importable wherever a suite is loaded (the Airflow worker, the spark-submit driver,
the CLI), which the installed package guarantees and a loose directory does not.

This module imports Great Expectations at module level, which TID253 forbids in
DAG-facing code; it is only ever imported from inside functions, when a suite is about to run.
"""

from __future__ import annotations

from great_expectations.expectations.core.unexpected_rows_expectation import (  # noqa: TID253
    UnexpectedRowsExpectation,
)

from cdcgen.validation.generation_rules import ROW_ORDER, RULES, RowRule


def flagged_rows_query(rule: RowRule) -> str:
    """The GX query of ``rule``: its flagged rows, the rule's condition as a comment."""
    return (
        f"SELECT {', '.join(rule.shown)} FROM {{batch}} WHERE {rule.flag} "
        f"ORDER BY {', '.join(ROW_ORDER[rule.batch])} /* {rule.flag}: {rule.condition} */"
    )


def _expectation_class(rule: RowRule) -> type[UnexpectedRowsExpectation]:
    """The class GX registers as ``rule.expectation`` (its name in snake case)."""
    name = "".join(word.capitalize() for word in rule.expectation.split("_"))
    namespace = {
        "__module__": __name__,
        "__qualname__": name,
        "__doc__": rule.why,
        "__annotations__": {"unexpected_rows_query": "str", "description": "str"},
        "unexpected_rows_query": flagged_rows_query(rule),
        "description": rule.description,
    }
    return type(name, (UnexpectedRowsExpectation,), namespace)


GENERATION_EXPECTATIONS: tuple[type[UnexpectedRowsExpectation], ...] = tuple(
    _expectation_class(rule) for rule in RULES
)
"""Importing this module registers every class with GX; the tuple documents them."""
