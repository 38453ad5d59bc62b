"""What a generation's validation decided, as the run carries it to publication.

Kept apart from the step that produces it (:mod:`.validate`) because the report records
(:mod:`.reporting`), the publish step and the run summary all read it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from cdcgen.core.generation import Generation
from cdcgen.reports.records import ExpectationOutcome
from cdcgen.validation.results import CheckOutcome, row_text


@dataclass(frozen=True)
class ValidationOutcome:
    """What the suites said about one extracted generation."""

    generation: Generation
    passed: bool
    summary: str
    data_docs: str | None = None
    failed: tuple[str, ...] = ()
    expectations: tuple[ExpectationOutcome, ...] = ()
    skipped: tuple[str, ...] = ()
    page: str | None = None
    #: Which ring the checks against the ring used, or why none ran ("" for tablets).
    ring: str = ""
    #: Whether those checks ran (a ring was known for this generation).
    ring_known: bool = False
    #: The generations table version validated, and the digest of its description:
    #: publication reads that version and refuses any other description.
    lake_version: int | None = None
    description_sha256: str | None = None


#: Offending rows quoted per check in the record (its Data Docs list them all).
ROWS_QUOTED = 3


def expectation_outcomes(checks: Sequence[CheckOutcome]) -> tuple[ExpectationOutcome, ...]:
    """Each check as the report site shows it: name, verdict, a few offending rows."""
    out = []
    for check in checks:
        samples = "; ".join(row_text(row) for row in check.samples[:ROWS_QUOTED])
        details = check.describe() + (f" e.g. {samples}" if samples else "")
        out.append(ExpectationOutcome(check.check, bool(check.passed), details))
    return tuple(out)
