"""The generations run's decisions over fakes of its ports: detect, publish in order, summary.

The fakes (``generation_fakes``) behave like the adapters: a generation is
public once its timestamp row is written, after its streams rows.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from cdcgen.core.generation import Generation
from cdcgen.pipeline.detect import detect
from cdcgen.pipeline.errors import GenerationRejected, PublicationRefused
from cdcgen.pipeline.outcomes import ValidationOutcome
from cdcgen.pipeline.publish import Publication, PublicationOutcome, publish_in_order, publish_named
from cdcgen.pipeline.run_summary import generations_run_summary
from unit.generation_fakes import Crash, FakeLake, FakePublisher, FakeSource, rows_for

T0 = datetime(2026, 11, 1, 12, 0, tzinfo=UTC)
GENS = [Generation(T0 + timedelta(minutes=10 * i), f"gen-{i}") for i in range(4)]


def passed(generation: Generation, ok: bool = True) -> ValidationOutcome:
    return ValidationOutcome(generation, ok, "summary", data_docs=f"/r/{generation.id}/index.html")


def world(committed: list[Generation]) -> tuple[FakeSource, FakePublisher, FakeLake]:
    lake = FakeLake({g: rows_for(g) for g in committed})
    return FakeSource(list(committed)), FakePublisher(), lake


def publish(
    detected: list[Generation],
    validations: list[ValidationOutcome],
    source: FakeSource,
    publisher: FakePublisher,
    lake: FakeLake,
) -> PublicationOutcome:
    return publish_in_order(
        detected,
        validations,
        source=source,
        publisher=publisher,
        lake=lake,
        target_keyspace="tgt",
    )


def test_detect_takes_what_is_committed_and_not_yet_public() -> None:
    source, publisher, _ = world(GENS)
    publisher.timestamps = [GENS[0], GENS[2]]
    assert [s.generation for s in detect(source, publisher)] == [GENS[1], GENS[3]]
    interval = (GENS[0].timestamp, GENS[1].timestamp)
    backfill = detect(source, publisher, interval)
    assert (backfill[0].generation.id, backfill[0].reason) == ("gen-0", "in_interval")


def test_a_clean_run_publishes_every_generation_oldest_first_streams_before_timestamps() -> None:
    source, publisher, lake = world(GENS[:3])
    detected = [s.generation for s in detect(source, publisher)]
    outcome = publish(
        list(reversed(detected)), [passed(g) for g in detected], source, publisher, lake
    )
    assert [p.generation for p in outcome.published] == GENS[:3]
    assert publisher.timestamps == GENS[:3]
    assert all(publisher.streams[g] == rows_for(g) for g in GENS[:3])  # the lake's rows
    assert outcome.held_back == ()
    summary = generations_run_summary("run", detected, [passed(g) for g in detected], outcome)
    assert summary.status == "ok" and summary.validation == "passed"
    assert summary.generations_published == 3 and summary.streams_published == 6
    assert summary.report == "/r/gen-0/index.html" and summary.problems == ()


def test_a_rejected_generation_is_not_published_and_holds_back_the_newer_ones() -> None:
    source, publisher, lake = world(GENS[:3])
    validations = [passed(GENS[0]), passed(GENS[1], ok=False), passed(GENS[2])]
    outcome = publish(GENS[:3], validations, source, publisher, lake)
    assert publisher.timestamps == [GENS[0]]
    assert GENS[1] not in publisher.streams and GENS[2] not in publisher.streams
    first = outcome.held_back[0]
    assert (first.generation, first.reason) == (GENS[1], "it failed validation")
    summary = generations_run_summary("run", GENS[:3], validations, outcome)
    assert summary.status == "failed" and summary.validation == "failed"
    assert summary.rejected == (GENS[1].iso,)
    assert any(GENS[2].iso in p and "held back" in p for p in summary.problems)


def test_an_older_generation_published_by_nobody_blocks_this_run() -> None:
    source, publisher, lake = world(GENS[:3])
    outcome = publish([GENS[2]], [passed(GENS[2])], source, publisher, lake)
    assert publisher.timestamps == [] and outcome.published == ()
    assert "older generation" in outcome.held_back[0].reason


def test_a_crash_before_the_timestamp_row_leaves_nothing_visible_and_a_rerun_completes() -> None:
    source, publisher, lake = world(GENS[:2])
    publisher.crash_before_timestamp_of = GENS[1]
    validations = [passed(g) for g in GENS[:2]]
    with pytest.raises(Crash):
        publish(GENS[:2], validations, source, publisher, lake)
    assert publisher.timestamps == [GENS[0]]  # GENS[1]'s streams exist, its timestamp not
    assert publisher.published_among(GENS) == {GENS[0]}
    publisher.crash_before_timestamp_of = None
    rerun = [s.generation for s in detect(source, publisher)]
    assert rerun == [GENS[1]]
    outcome = publish(rerun, validations[1:], source, publisher, lake)
    assert publisher.timestamps == GENS[:2] and publisher.streams[GENS[1]] == rows_for(GENS[1])
    assert [p.generation for p in outcome.published] == [GENS[1]]


def test_publishing_a_rejected_outcome_directly_is_refused() -> None:
    from cdcgen.pipeline.publish import publish_one

    _, publisher, lake = world(GENS[:1])
    with pytest.raises(GenerationRejected):
        publish_one(GENS[0], passed(GENS[0], ok=False), lake, publisher, "tgt")
    assert publisher.streams == {}


def test_summary_names_never_validated_generations_and_a_failed_detect() -> None:
    outcome = PublicationOutcome()
    summary = generations_run_summary("run", GENS[:2], [passed(GENS[0])], outcome)
    assert summary.validation == "incomplete"
    assert summary.not_validated == (GENS[1].iso,)
    failed_detect = generations_run_summary("run", None, [], outcome)
    assert failed_detect.problems == ("detect failed: nothing was examined",)
    assert generations_run_summary("run", [], [], outcome).validation == "none"


# --- one generation named by hand (`cdcgen generation publish`) ---------------------------


def publish_named_in(
    source: FakeSource,
    publisher: FakePublisher,
    timestamp: datetime,
    extracted: Generation | None = None,
    force: bool = False,
    ranges: int = 2,
) -> Publication:
    return publish_named(
        timestamp,
        rows_for(extracted or Generation(timestamp, "file"), ranges),
        source=source,
        publisher=publisher,
        target_keyspace="tgt",
        extracted=extracted,
        force=force,
    )


def test_a_named_generation_goes_out_with_its_own_rows() -> None:
    source, publisher, _ = world(GENS[:2])
    publication = publish_named_in(source, publisher, GENS[0].timestamp, extracted=GENS[0])
    assert (publication.generation, publication.streams) == (GENS[0], 2)
    assert publisher.timestamps == [GENS[0]] and publisher.streams[GENS[0]] == rows_for(GENS[0])


def test_a_lake_partition_under_another_generations_timestamp_is_refused() -> None:
    source, publisher, _ = world(GENS[:2])
    with pytest.raises(PublicationRefused) as refused:
        publish_named_in(source, publisher, GENS[0].timestamp, extracted=GENS[1])
    assert f"that of {GENS[1].label}, not of the generation at {GENS[0].iso}" in str(refused.value)
    assert publisher.streams == {} and publisher.timestamps == []


def test_a_partition_extracted_from_another_generation_at_that_timestamp_is_refused() -> None:
    source, publisher, _ = world(GENS[:1])
    elsewhere = Generation(GENS[0].timestamp, "other-cluster")
    with pytest.raises(PublicationRefused, match=r"other-cluster.*gen-0"):
        publish_named_in(source, publisher, GENS[0].timestamp, extracted=elsewhere)
    assert publisher.streams == {}


def test_a_timestamp_the_source_has_not_committed_is_refused() -> None:
    source, publisher, _ = world(GENS[:2])
    between = GENS[0].timestamp + timedelta(minutes=1)
    with pytest.raises(PublicationRefused, match=r"no generation at 2026-11-01T12:01:00\.000"):
        publish_named_in(source, publisher, between)
    assert publisher.streams == {}
    # A tablets stream set is looked for in its own table's lane only.
    stream_set = Generation(GENS[0].timestamp, "tbl-id", "shop.orders")
    with pytest.raises(PublicationRefused, match=r"no shop\.orders stream set at"):
        publish_named_in(source, publisher, GENS[0].timestamp, extracted=stream_set)


def test_publication_order_holds_for_a_named_generation_forced_or_not() -> None:
    source, publisher, _ = world(GENS[:3])
    for force in (False, True):
        with pytest.raises(PublicationRefused, match=r"gen-1.*older generation .*12:00:00\.000"):
            publish_named_in(source, publisher, GENS[1].timestamp, force=force)
    assert publisher.streams == {}
    publisher.timestamps = [GENS[0], GENS[2]]  # GENS[1] was skipped by someone
    for force in (False, True):
        with pytest.raises(PublicationRefused, match=r"newer generation .*12:20:00\.000"):
            publish_named_in(source, publisher, GENS[1].timestamp, force=force)
    assert publisher.streams == {}


def test_a_published_generation_goes_out_again_only_with_force_and_only_unchanged() -> None:
    source, publisher, _ = world(GENS[:2])
    publish_named_in(source, publisher, GENS[0].timestamp, extracted=GENS[0])
    with pytest.raises(PublicationRefused, match=r"gen-0.*already published; force"):
        publish_named_in(source, publisher, GENS[0].timestamp, extracted=GENS[0])
    again = publish_named_in(source, publisher, GENS[0].timestamp, extracted=GENS[0], force=True)
    assert again.generation == GENS[0] and publisher.timestamps == [GENS[0]]
    with pytest.raises(ValueError, match="other streams"):  # the publisher's own refusal
        publish_named_in(source, publisher, GENS[0].timestamp, force=True, ranges=3)
