"""Publish a run's validated generations, oldest first, holding back what must wait.

The order rule is :func:`cdcgen.core.publication.publication_plan`; this module applies it
with the ports: the committed generations not yet public (source and publisher), the
validated rows (the generation lake), and the publisher, which writes every streams row
before the timestamp row. What is published is exactly what was validated: the rows come
from the extracted partition, checked against the hash recorded at extraction.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass

from cdcgen.core.generation import Generation
from cdcgen.core.publication import publication_plan
from cdcgen.pipeline.outcomes import GenerationRejected, ValidationOutcome
from cdcgen.ports import DescriptionPublisher, GenerationLake, GenerationSource

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Publication:
    """One generation made public: how many streams, in how many description rows."""

    generation: Generation
    streams: int
    stream_rows: int
    target_keyspace: str
    page: str | None = None


@dataclass(frozen=True)
class HeldBack:
    generation: Generation
    reason: str


@dataclass(frozen=True)
class PublicationOutcome:
    """What the publish step did; the run's summary decides its fate from it."""

    published: tuple[Publication, ...] = ()
    held_back: tuple[HeldBack, ...] = ()


def committed_by_visibility(
    source: GenerationSource, publisher: DescriptionPublisher
) -> tuple[list[Generation], set[Generation]]:
    """Committed generations consumers cannot see yet (this run's and any other), and
    those they can."""
    committed = source.list_generations()
    public = publisher.published_among(committed)
    return [g for g in committed if g not in public], public


def publish_one(
    generation: Generation,
    validation: ValidationOutcome | None,
    lake: GenerationLake,
    publisher: DescriptionPublisher,
    target_keyspace: str,
) -> Publication:
    """Publish exactly the validated description: streams first, then the timestamp row."""
    if validation is not None and not validation.passed:
        raise GenerationRejected(f"{generation.label} did not pass validation", validation)
    if validation is None:
        rows = lake.stream_rows(generation)
    else:
        rows = lake.stream_rows(generation, validation.lake_version, validation.description_sha256)
    written = publisher.publish(generation, rows)
    streams = sum(len(streams) for _, streams in rows)
    return Publication(generation, streams, written, target_keyspace)


def publish_in_order(
    detected: Sequence[Generation],
    validations: Sequence[ValidationOutcome],
    *,
    source: GenerationSource,
    publisher: DescriptionPublisher,
    lake: GenerationLake,
    target_keyspace: str,
) -> PublicationOutcome:
    """Publish this run's validated generations oldest first (see the module doc).

    Returns what went out and what was held back with why; the caller decides the run's
    fate (a publish task succeeds so that the Asset events of those published are kept).
    """
    by_generation = {v.generation: v for v in validations}
    verdicts = {g: v.passed for g, v in by_generation.items()}
    unpublished, public = committed_by_visibility(source, publisher)
    plan = publication_plan(detected, verdicts, unpublished, public)
    published: list[Publication] = []
    held_back: list[HeldBack] = []
    for step in plan:
        if step.held_back is None:
            validation = by_generation.get(step.generation)
            published.append(
                publish_one(step.generation, validation, lake, publisher, target_keyspace)
            )
        else:
            log.error("not published: %s: %s", step.generation.label, step.held_back)
            held_back.append(HeldBack(step.generation, step.held_back))
    return PublicationOutcome(tuple(published), tuple(held_back))
