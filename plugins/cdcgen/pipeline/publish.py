"""Publish a run's validated generations, oldest first, holding back what must wait.

The order rule is :func:`cdcgen.core.publication.publication_plan`; this module applies it
with the ports: the committed generations not yet public (source and publisher), the
validated rows (the generation lake), and the publisher, which writes every streams row
before the timestamp row. What is published is exactly what was validated: the rows come
from the extracted partition, checked against the hash recorded at extraction.

:func:`publish_named` is the same publication for one generation a person names
(``cdcgen generation publish``): the run's selection and order rules decide, so a
command typed by hand cannot do what the DAG refuses.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from cdcgen.core.generation import Generation
from cdcgen.core.publication import publication_plan, select_generations
from cdcgen.core.time import generation_timestamp, iso_millis, to_millis
from cdcgen.pipeline.errors import GenerationRejected, PublicationRefused
from cdcgen.pipeline.outcomes import ValidationOutcome
from cdcgen.ports import DescriptionPublisher, GenerationLake, GenerationSource, StreamRows

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
    return publish_rows(generation, rows, publisher, target_keyspace)


def publish_rows(
    generation: Generation, rows: StreamRows, publisher: DescriptionPublisher, target_keyspace: str
) -> Publication:
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


def publish_named(
    timestamp: datetime,
    rows: StreamRows,
    *,
    source: GenerationSource,
    publisher: DescriptionPublisher,
    target_keyspace: str,
    extracted: Generation | None = None,
    force: bool = False,
) -> Publication:
    """Publish ``rows`` as the committed generation at ``timestamp``, under the run's rules.

    Refused, by name, unless the source has committed a generation at ``timestamp`` (a
    timestamp row for anything else sends consumers to streams no write goes to), the rows
    are that generation's (``extracted``: the generation a lake partition was extracted
    from, when they come from one), every older generation of its lane is public and no
    newer one is (:func:`~cdcgen.core.publication.publication_plan`), and it is not public
    yet. ``force`` publishes a public one again, which is all the DAG's ``force`` Param
    does; the publisher still refuses streams other than those already published.

    The rows' validation is the caller's (``cdcgen generation validate``): no run recorded
    a verdict for them.
    """
    when = generation_timestamp(timestamp)
    if extracted is not None and extracted.timestamp != when:
        raise PublicationRefused(
            f"the description is that of {extracted.label}, not of the generation at "
            f"{iso_millis(when)}: publish a generation's own extraction under its own timestamp"
        )
    lane = extracted.table if extracted is not None else ""
    unpublished, public = committed_by_visibility(source, publisher)
    committed = [g for g in (*unpublished, *public) if g.table == lane]
    wanted = str(to_millis(when))
    try:
        chosen = select_generations(committed, public, generation_id=wanted, force=force)
    except LookupError:
        scope = f"{lane} stream set" if lane else "generation"
        raise PublicationRefused(
            f"no {scope} at {iso_millis(when)} is committed on the source: consumers would "
            "read streams no write goes to"
        ) from None
    if not chosen:  # committed, and public already
        named = next(g for g in committed if g.matches(wanted))
        raise PublicationRefused(
            f"{named.label} is already published; force publishes the same rows again"
        )
    generation = chosen[0].generation
    if extracted is not None and extracted.id != generation.id:
        raise PublicationRefused(
            f"the description was extracted from generation id {extracted.id}, but the "
            f"source's is {generation.label}: extract it from this source again"
        )
    step = publication_plan([generation], {generation: True}, unpublished, public)[0]
    if step.held_back is not None:
        raise PublicationRefused(f"{generation.label} not published: {step.held_back}")
    return publish_rows(generation, rows, publisher, target_keyspace)
