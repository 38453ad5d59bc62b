"""What a run did, in the one shape of the three DAGs, and a ``cdc_generations`` run's.

Written to ``<report_dir>/summaries/<run id>.json`` (``make demo`` and the tests read the
newest) and returned by the DAG's last task. ``problems`` lists every reason the run must
fail: detection failed, a generation was rejected, never validated, held back, or failed
to publish; an empty list means every detected generation is public. ``ring_checks`` says
how the checks against the ring went (``ring_checked``: the generations whose ring was
known; ``ring_unknown``: those validated without one).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from pydantic import BaseModel, ConfigDict, JsonValue, computed_field

from cdcgen.adapters.files import write_atomic
from cdcgen.core.generation import Generation
from cdcgen.core.user_text import file_name
from cdcgen.pipeline.outcomes import ValidationOutcome
from cdcgen.pipeline.publish import PublicationOutcome

#: Under the report directory: one summary per generations run.
SUMMARIES_DIR = "summaries"


def validation_verdict(
    detected: Sequence[Generation], validations: Sequence[ValidationOutcome]
) -> str:
    """``passed`` when every detected generation passed; ``failed`` when one failed;
    ``incomplete`` when some never reached validation; ``none`` when nothing was detected."""
    reached = {v.generation for v in validations}
    if any(not v.passed for v in validations):
        return "failed"
    if any(g not in reached for g in detected):
        return "incomplete"
    return "passed" if detected else "none"


#: The checks against the ring (``expectations/generation_coverage.json``).
RING_CHECKS = frozenset(
    {
        "entry count equals the ring's vnode count",
        "range ends are ring tokens",
        "stream count equals the owner's shard count",
        "a node's ranges hold equally many streams",
    }
)


def ring_verdict(validations: Sequence[ValidationOutcome]) -> str:
    """``passed``/``failed``: the checks against the ring on every generation whose ring
    was known; ``not run`` when no generation's ring was known; ``not applicable`` for
    tablets stream sets (they follow tablets, not the vnode ring)."""
    if validations and all(v.generation.table for v in validations):
        return "not applicable"
    checked = [v for v in validations if v.ring_known]
    outcomes = [e.passed for v in checked for e in v.expectations if e.name in RING_CHECKS]
    if not outcomes:
        return "not run"
    return "passed" if all(outcomes) else "failed"


class RunSummary(BaseModel):
    """What a run of any of the three DAGs did: its id, and every reason it must fail
    (none: ``status`` ``ok``). Each DAG's summary adds its own fields; the file and the
    last task's XCom value are :meth:`to_json`."""

    model_config = ConfigDict(frozen=True)

    run_id: str
    problems: tuple[str, ...] = ()

    @computed_field  # type: ignore[prop-decorator]
    @property
    def status(self) -> str:
        return "failed" if self.problems else "ok"

    def to_json(self) -> dict[str, JsonValue]:
        """The summary as JSON values (keys given only: a table's summary may be short)."""
        return self.model_dump(mode="json", exclude_unset=True)


class HeldBack(BaseModel):
    """A generation publication held back, and why."""

    model_config = ConfigDict(frozen=True)

    generation: str
    reason: str


class LakeVersion(BaseModel):
    """What a validation read: the generations table version and its description's digest
    (publication reads the same, or refuses)."""

    model_config = ConfigDict(frozen=True)

    version: int
    description_sha256: str | None


class GenerationsRunSummary(RunSummary):
    """A ``cdc_generations`` run (see the module doc)."""

    generations_detected: int
    generations_published: int
    streams_published: int
    published: tuple[str, ...]
    rejected: tuple[str, ...]
    not_validated: tuple[str, ...]
    held_back: tuple[HeldBack, ...]
    validation: str
    ring_checks: str
    ring_checked: tuple[str, ...]
    ring_unknown: tuple[str, ...]
    report: str | None
    reports: tuple[str, ...]
    lake_format: str
    lake_versions: dict[str, LakeVersion]


def generations_run_summary(
    run_id: str,
    detected: Sequence[Generation] | None,
    validations: Sequence[ValidationOutcome],
    publication: PublicationOutcome,
) -> GenerationsRunSummary:
    """The run's summary (see the module doc)."""
    generations = list(detected or ())
    reached = {v.generation for v in validations}
    rejected = sorted(v.generation.iso for v in validations if not v.passed)
    missing = sorted(g.iso for g in generations if g not in reached)
    reports = sorted({v.data_docs for v in validations if v.data_docs})
    held = [HeldBack(generation=h.generation.iso, reason=h.reason) for h in publication.held_back]
    problems = []
    if detected is None:
        problems.append("detect failed: nothing was examined")
    if rejected:
        problems.append(f"rejected by validation: {', '.join(rejected)}")
    if missing:
        problems.append(f"never validated (wait or extract failed): {', '.join(missing)}")
    others = [h for h in held if h.generation not in rejected + missing]
    if others:
        problems.append("held back: " + "; ".join(f"{h.generation} ({h.reason})" for h in others))
    unpublished = len(generations) - len(publication.published)
    if unpublished and not problems:
        problems.append(f"{unpublished} validated generation(s) failed to publish")
    return GenerationsRunSummary(
        run_id=run_id,
        generations_detected=len(generations),
        generations_published=len(publication.published),
        streams_published=sum(p.streams for p in publication.published),
        published=tuple(sorted(p.generation.iso for p in publication.published)),
        rejected=tuple(rejected),
        not_validated=tuple(missing),
        held_back=tuple(held),
        validation=validation_verdict(generations, validations),
        ring_checks=ring_verdict(validations),
        ring_checked=tuple(sorted(v.generation.iso for v in validations if v.ring_known)),
        ring_unknown=tuple(
            sorted(v.generation.iso for v in validations if v.ring and not v.ring_known)
        ),
        report=reports[0] if reports else None,
        reports=tuple(reports),
        lake_format="delta",
        lake_versions={
            v.generation.iso: LakeVersion(
                version=v.lake_version, description_sha256=v.description_sha256
            )
            for v in validations
            if v.lake_version is not None
        },
        problems=tuple(problems),
    )


def write_summary(folder: Path, summary: RunSummary) -> Path:
    """``<folder>/<run id>.json``, replacing an earlier one of the same run whole (the
    demo and the tests read the newest while a run may be writing it)."""
    path = folder / f"{file_name(summary.run_id)}.json"
    write_atomic(path, json.dumps(summary.to_json(), indent=2, sort_keys=True) + "\n")
    return path
