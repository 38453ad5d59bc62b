"""Detect the generations a run handles: the committed ones not yet public, plus (for a
backfill) those of its interval, plus (forced) every one in scope.

The rule is :func:`cdcgen.core.publication.select_generations`; this module asks the
ports what is committed and what is public, and logs the choice.

Detection also records the ring: the live ring goes into the lake with the newest
committed generation, the first time a run sees that generation as the newest (the ring
it was made from). Each selected generation is then validated against the ring recorded
with it (:func:`cdcgen.core.ring.ring_for`); an older one that no run saw as the newest
has none, which its validation says.
"""

from __future__ import annotations

import logging
from datetime import datetime

from cdcgen.core.generation import Generation
from cdcgen.core.publication import Selection, select_generations
from cdcgen.core.ring import ring_differences, ring_for
from cdcgen.ports import DescriptionPublisher, GenerationSource, RingReader, RingRecords

log = logging.getLogger(__name__)


def detect(
    source: GenerationSource,
    publisher: DescriptionPublisher,
    interval: tuple[datetime, datetime] | None = None,
    *,
    generation_id: str | None = None,
    force: bool = False,
    ring: RingReader | None = None,
    rings: RingRecords | None = None,
) -> list[Selection]:
    """The run's generations, oldest first, each with why it runs.

    With ``ring`` and ``rings`` (vnode clusters), records the live ring with the newest
    committed generation first.
    """
    committed = source.list_generations()
    if ring is not None and rings is not None:
        record_ring(committed[-1] if committed else None, ring, rings)
    public = publisher.published_among(committed)
    chosen = select_generations(
        committed, public, interval, generation_id=generation_id, force=force
    )
    log.info(
        "%d committed generation(s), %d selected for this run: %s",
        len(committed),
        len(chosen),
        ", ".join(f"{s.generation.label} ({s.reason})" for s in chosen) or "none",
    )
    if rings is not None:
        for selection in chosen:
            _, why = ring_for(rings.recorded(selection.generation))
            log.info("%s: %s", selection.generation.label, why)
    return chosen


def record_ring(generation: Generation | None, reader: RingReader, rings: RingRecords) -> None:
    """Records the live ring with the newest committed generation unless it has one."""
    if generation is None:
        return
    live = reader.read_ring()
    if live is None:
        log.warning("the cluster reports no token owner: no ring to record")
        return
    if rings.record(generation, live):
        log.info("recorded the ring of %s: %s", generation.label, live.describe())
        return
    recorded = rings.recorded(generation)
    changes = ring_differences(recorded, live) if recorded else []
    if changes:
        log.warning(
            "the live ring differs from the one recorded with %s (%s); it is validated "
            "against the recorded one",
            generation.label,
            ", ".join(changes),
        )
