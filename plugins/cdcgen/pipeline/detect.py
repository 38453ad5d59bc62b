"""Detect the generations a run handles: the committed ones not yet public, plus (for a
backfill) those of its interval, plus (forced) every one in scope.

The rule is :func:`cdcgen.core.publication.select_generations`; this module asks the
ports what is committed and what is public, and logs the choice.
"""

from __future__ import annotations

import logging
from datetime import datetime

from cdcgen.core.publication import Selection, select_generations
from cdcgen.ports import DescriptionPublisher, GenerationSource

log = logging.getLogger(__name__)


def detect(
    source: GenerationSource,
    publisher: DescriptionPublisher,
    interval: tuple[datetime, datetime] | None = None,
    *,
    generation_id: str | None = None,
    force: bool = False,
) -> list[Selection]:
    """The run's generations, oldest first, each with why it runs."""
    committed = source.list_generations()
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
    return chosen
