"""Which committed generations make a watcher event: only those not published, each once,
and the publisher is asked only about generations the watch has not settled."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

import pytest

from cdcgen.adapters.errors import ConnectionFailed
from cdcgen.core.generation import Generation
from cdcgen.pipeline.watch import GenerationWatch, describe, unsettled
from unit.generation_fakes import FakePublisher, FakeSource, rows_for

T0 = datetime(2026, 11, 28, 9, 0, tzinfo=UTC)
GENS = [Generation(T0 + timedelta(minutes=10 * i), f"gen-{i}") for i in range(4)]


@dataclass
class CountingPublisher(FakePublisher):
    """The fake publisher, remembering what each ``published_among`` was asked."""

    asked: list[list[Generation]] = field(default_factory=list)
    fail_next: bool = False

    def published_among(self, generations: Sequence[Generation]) -> set[Generation]:
        if self.fail_next:
            self.fail_next = False
            raise ConnectionFailed("no CQL node answered")
        self.asked.append(list(generations))
        return super().published_among(generations)


def publish(publisher: FakePublisher, generation: Generation) -> None:
    publisher.publish(generation, rows_for(generation))


def test_unsettled_is_committed_minus_published_and_announced_oldest_first() -> None:
    assert unsettled(reversed(GENS), {GENS[0]}, {GENS[2]}) == [GENS[1], GENS[3]]


def test_first_poll_announces_every_unpublished_generation_oldest_first() -> None:
    source, publisher = FakeSource([GENS[2], GENS[0], GENS[1]]), CountingPublisher()
    publish(publisher, GENS[0])
    watch = GenerationWatch()
    assert watch.poll(source, publisher) == [GENS[1], GENS[2]]
    assert watch.announced == {GENS[1], GENS[2]}


def test_a_published_generation_makes_no_event() -> None:
    source, publisher = FakeSource(GENS[:2]), CountingPublisher()
    publish(publisher, GENS[0])
    publish(publisher, GENS[1])
    assert GenerationWatch().poll(source, publisher) == []


def test_each_generation_is_announced_once_while_its_run_works() -> None:
    source, publisher = FakeSource([GENS[0]]), CountingPublisher()
    watch = GenerationWatch()
    assert watch.poll(source, publisher) == [GENS[0]]
    assert watch.poll(source, publisher) == []  # still unpublished: the run is at work
    source.committed.append(GENS[1])
    assert watch.poll(source, publisher) == [GENS[1]]  # only the new one
    assert watch.poll(source, publisher) == []


def test_a_generation_published_by_another_run_between_commit_and_poll_makes_none() -> None:
    source, publisher = FakeSource([GENS[0]]), CountingPublisher()
    publish(publisher, GENS[0])
    watch = GenerationWatch()
    assert watch.poll(source, publisher) == []
    source.committed.append(GENS[1])
    publish(publisher, GENS[1])  # the cron run got there first
    assert watch.poll(source, publisher) == []


def test_a_quiet_cluster_costs_the_committed_list_only() -> None:
    source, publisher = FakeSource(GENS[:2]), CountingPublisher()
    publish(publisher, GENS[0])
    watch = GenerationWatch()
    watch.poll(source, publisher)
    assert publisher.asked == [GENS[:2]]
    for _ in range(5):
        watch.poll(source, publisher)
    assert publisher.asked == [GENS[:2]]  # nothing unsettled: the publisher is not asked
    source.committed.append(GENS[2])
    watch.poll(source, publisher)
    assert publisher.asked[-1] == [GENS[2]]  # only what is new


def test_a_failed_poll_changes_nothing_and_the_next_one_announces() -> None:
    source, publisher = FakeSource([GENS[0]]), CountingPublisher(fail_next=True)
    watch = GenerationWatch()
    with pytest.raises(ConnectionFailed):
        watch.poll(source, publisher)
    assert watch.announced == frozenset()
    assert watch.poll(source, publisher) == [GENS[0]]


def test_generations_no_longer_committed_are_forgotten() -> None:
    source, publisher = FakeSource(GENS[:3]), CountingPublisher()
    watch = GenerationWatch()
    assert watch.poll(source, publisher) == GENS[:3]
    source.committed.remove(GENS[0])  # raft drops old generations from the committed list
    watch.poll(source, publisher)
    assert watch.announced == {GENS[1], GENS[2]}


def test_tablets_stream_sets_of_two_tables_at_one_instant_are_two_generations() -> None:
    a = Generation(T0, "log-a", "ks.a")
    b = Generation(T0, "log-b", "ks.b")
    source, publisher = FakeSource([a, b]), CountingPublisher()
    publish(publisher, a)
    assert GenerationWatch().poll(source, publisher) == [b]


def test_the_event_names_each_generation() -> None:
    tablets = Generation(T0, "log-a", "ks.a")
    assert describe([GENS[1], tablets]) == [
        {
            "id": "gen-1",
            "timestamp": "2026-11-28T09:10:00.000+00:00",
            "ts_ms": GENS[1].ms,
            "table": None,
        },
        {"id": "log-a", "timestamp": GENS[0].iso, "ts_ms": GENS[0].ms, "table": "ks.a"},
    ]
