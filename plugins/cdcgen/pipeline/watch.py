"""Which committed generations call for a run of the generations DAG, poll after poll.

The generations DAG is scheduled by events as well as by the clock: a watcher in the
triggerer (:class:`cdcgen.airflow.triggers.GenerationCommittedTrigger`) asks the source
cluster every few seconds what is committed, and an event starts a run as soon as a
generation is there that consumers cannot see yet. This module decides which
generations make an event; it knows the ports only, so the rule is tested on fakes.

* A generation makes an event only while it is committed and **not published**: the
  description tables are the truth of what consumers see, the same question ``detect``
  asks (:func:`cdcgen.pipeline.detect.detect`), so a generation some run (scheduled,
  manual, backfill) already published never starts another.
* A generation makes **one** event per watch: the run it starts takes every unpublished
  generation, and polls keep coming while that run extracts and validates. Announcing
  it again on every poll would queue a run that finds nothing to do. A run that fails to
  publish it leaves it to the cron schedule, kept as the safety net, and to the next
  watch (a triggerer restart starts one).
* Each poll reads the committed list (one small query in raft mode) and asks the
  publisher only about generations it has not settled yet (known published, or
  announced): a quiet cluster costs one read per poll, a new generation one more.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from cdcgen.core.generation import Generation
from cdcgen.ports import DescriptionPublisher, GenerationSource


def unsettled(
    committed: Iterable[Generation],
    published: Iterable[Generation],
    announced: Iterable[Generation],
) -> list[Generation]:
    """The committed generations neither known to be published nor announced yet, oldest
    first: those the publisher must be asked about."""
    settled = set(published) | set(announced)
    return sorted(g for g in set(committed) if g not in settled)


class GenerationWatch:
    """What one watcher knows between polls: the generations it saw published and those
    it announced. Both shrink to what is still committed, so a long-lived watch holds
    what the metadata holds, no more."""

    def __init__(self) -> None:
        self._published: set[Generation] = set()
        self._announced: set[Generation] = set()

    @property
    def announced(self) -> frozenset[Generation]:
        return frozenset(self._announced)

    def poll(self, source: GenerationSource, publisher: DescriptionPublisher) -> list[Generation]:
        """The generations committed and unpublished that no earlier poll announced,
        oldest first (empty: no event). A failed read changes nothing: the next poll
        asks again."""
        committed = source.list_generations()
        asked = unsettled(committed, self._published, self._announced)
        public: set[Generation] = set(publisher.published_among(asked)) if asked else set()
        new = [g for g in asked if g not in public]
        still = set(committed)
        self._published = (self._published | public) & still
        self._announced = (self._announced | set(new)) & still
        return new


def describe(generations: Sequence[Generation]) -> list[dict[str, object]]:
    """The event's JSON form of ``generations`` (what the DAG run's Asset event carries)."""
    return [
        {"id": g.id, "timestamp": g.iso, "ts_ms": g.ms, "table": g.table or None}
        for g in generations
    ]
