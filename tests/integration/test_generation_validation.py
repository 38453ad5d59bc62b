"""The GX suites: valid generations pass, each corruption names its expectation, on
either flag engine (SQLite in-process, Spark, also on a Spark Connect server), with the
same verdicts and rows.

Spark and GX cost seconds per validation, so the corruptions share one run per engine: a
generation carrying every corruption, each in its own entry, validated once per engine
(module fixture); each parametrized test then checks that its corruption made the right
expectation fail and that the corrupted entry is among the offending rows, and one test
compares the two engines' results check by check, row by row.
"""

from __future__ import annotations

import copy
import random
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from cdcgen.config import PipelineConfig
from cdcgen.core.ring import GOSSIP_RING, RAFT_RING, Ring, RingNode
from cdcgen.core.stream_id import StreamId
from cdcgen.core.tokens import shard_of
from cdcgen.core.topology import Node, make_generation
from cdcgen.core.topology_json import description_to_json, nodes_to_json
from cdcgen.generation_lake.description_columns import DescriptionColumns
from cdcgen.generation_lake.description_json import columns_from_json
from cdcgen.generation_lake.generation_writes import write_generation
from cdcgen.generation_lake.spark_extract import extract_generation
from cdcgen.generation_lake.streams_table import flatten_generation
from cdcgen.validation.errors import ValidationFailed
from cdcgen.validation.generation_suite import validate_description, validate_generation
from cdcgen.validation.results import ValidationResult

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytest_plugins = ("conftest_spark",)
pytestmark = pytest.mark.integration

T1 = datetime(2026, 11, 22, 10, 0, tzinfo=UTC)
T2 = T1 + timedelta(minutes=5)
_rng = random.Random(42)
NODES = [
    Node(f"node{i}", 4, 12, tuple(_rng.randrange(-(2**63), 2**63) for _ in range(6)))
    for i in range(3)
]
Json = dict[str, Any]


def _generation(seed: int) -> Json:
    return description_to_json(make_generation(NODES, random.Random(seed)))


# --- valid generations ------------------------------------------------------------------


ENGINES = ("sql", "spark")


@pytest.mark.parametrize("engine", ENGINES)
def test_a_valid_generation_passes_every_check(
    spark: SparkSession, tmp_path: Path, engine: str
) -> None:
    lake = tmp_path / "lake"
    write_generation(lake, columns_from_json(_generation(1)), T1, "previous")
    extracted = extract_generation(
        spark, lake, columns_from_json(_generation(2)), T2, "current", nodes=NODES
    )
    config = PipelineConfig(lake_path=lake, report_dir=tmp_path / "reports")
    result = validate_generation(config, extracted.artifact, spark=spark, engine=engine)
    assert result.passed, result.summary
    assert result.failures == [] and result.skipped == []  # topology and previous were known
    assert len(result.checks) == 17
    assert result.ring_known and "topology file: 3 nodes, 18 tokens, 12 shards" in result.ring
    assert {"vnode colocation", "shard colocation", "stream IDs unique"} <= {
        c.check for c in result.checks
    }
    assert result.report_index == tmp_path / "reports" / extracted.artifact.label / "index.html"
    assert result.report_index.is_file()
    assert list(result.report_index.parent.glob("validations/*/*/*/*.html"))
    assert result.raise_if_failed(ValidationFailed) is result


def test_ranges_too_small_for_every_shard_pass_by_the_range_end_rule(
    spark: SparkSession, tmp_path: Path
) -> None:
    # Vnodes 1000 tokens wide: with ignore_msb 12 each shard's tokens come in runs of
    # 2**46, so most shards own no token of a range and their stream sits on its end.
    nodes = [Node("a", 16, 12, (0, 2000, 4000)), Node("b", 8, 12, (1000, 3000, 5000))]
    columns = DescriptionColumns.from_description(make_generation(nodes, random.Random(3)))
    table = flatten_generation(columns, T1, "tiny").to_pydict()
    on_end = [
        i
        for i, token in enumerate(table["stream_token"])
        if token == table["range_end"][i]
        and table["entry_index"][i] != 0
        and shard_of(token, table["shard_count"][i], table["ignore_msb"][i]) != table["shard"][i]
    ]
    assert len(on_end) > 20  # the rule is really exercised, not just present
    result = validate_description(spark, columns, report_dir=tmp_path / "docs", nodes=nodes)
    assert result.passed, result.summary
    assert result.report_index.is_file()


def _tablet_set(tablets: int, seed: int) -> DescriptionColumns:
    from cdcgen.adapters.description_rows import tablets_description
    from cdcgen.core.tablets import TabletStreamSet, tablet_stream_id

    rng = random.Random(seed)
    last_tokens = sorted({rng.randrange(-(2**63) + 1, 2**63) for _ in range(tablets)})
    streams = tuple(tablet_stream_id(token, rng) for token in last_tokens)
    return DescriptionColumns.from_description(tablets_description(TabletStreamSet(T1, streams)))


def test_a_tablets_stream_set_passes_the_tablets_rules(spark: SparkSession, tmp_path: Path) -> None:
    lake = tmp_path / "lake"
    config = PipelineConfig(lake_path=lake, report_dir=tmp_path / "reports")
    write_generation(lake, _tablet_set(4, 1), T1, "log-id", table="shop.orders")
    split = extract_generation(spark, lake, _tablet_set(8, 2), T2, "log-id", table="shop.orders")
    result = validate_generation(config, split.artifact, spark=spark)
    assert result.passed, result.summary
    checks = {c.check for c in result.checks}
    assert {"one stream per tablet", "stream on its tablet's last token"} <= checks
    assert "shard colocation" not in checks  # a vnode rule: tablets streams sit on no shard j
    assert result.report_index.parent.parent.name == "table=shop.orders"


@pytest.mark.parametrize("engine", ENGINES)
def test_a_tablet_stream_off_its_last_token_fails(
    spark: SparkSession, tmp_path: Path, engine: str
) -> None:
    good = _tablet_set(6, 3).to_description()
    moved = StreamId.from_parts(good.entries[2].streams[0].token - 1, 0, 77)
    bad = copy.deepcopy(description_to_json(good))
    bad["entries"][2]["streams"] = [moved.hex]
    lake = tmp_path / "lake"
    config = PipelineConfig(lake_path=lake, report_dir=tmp_path / "reports")
    artifact = write_generation(lake, columns_from_json(bad), T1, "log-id", table="shop.orders")
    result = validate_generation(config, artifact, spark=spark, engine=engine)
    failed = {c.check: c for c in result.failures}
    assert set(failed) == {"stream on its tablet's last token"}, result.summary
    assert [
        row["stream_id_hex"] for row in failed["stream on its tablet's last token"].samples
    ] == [moved.hex]


# --- corruptions --------------------------------------------------------------------------


def _entry_with_distinct_first_tokens(data: Json, start: int) -> int:
    for index in range(start, len(data["entries"])):
        streams = data["entries"][index]["streams"]
        if StreamId.from_hex(streams[0]).token != StreamId.from_hex(streams[1]).token:
            return index
    raise AssertionError("no entry with two distinct stream tokens")


def swap_shards(data: Json, previous: Json) -> int:
    index = _entry_with_distinct_first_tokens(data, 1)
    streams = data["entries"][index]["streams"]
    streams[0], streams[1] = streams[1], streams[0]
    return index


def bad_version(data: Json, previous: Json) -> int:
    index = 3
    text = data["entries"][index]["streams"][2]
    data["entries"][index]["streams"][2] = text[:-1] + "2"  # low nibble of byte 15
    return index


def duplicate_stream(data: Json, previous: Json) -> int:
    index = 5
    data["entries"][index]["streams"][1] = data["entries"][index]["streams"][0]
    return index


def token_outside_range(data: Json, previous: Json) -> int:
    index = 7
    entry = data["entries"][index]
    entry["streams"][0] = StreamId.from_parts(entry["token_range_end"] + 1, index, 12345).hex
    return index


def missing_stream(data: Json, previous: Json) -> int:
    index = 9
    data["entries"][index]["streams"].pop()
    return index


def reused_id(data: Json, previous: Json) -> int:
    # Same ring, other seed: the previous generation's stream for (entry, shard) has the
    # right token and index, only its random bits differ. Reusing it breaks nothing else.
    index = 11
    data["entries"][index]["streams"][3] = previous["entries"][index]["streams"][3]
    return index


def entry_without_streams(data: Json, previous: Json) -> int:
    index = 13
    data["entries"][index]["streams"] = []
    return index


def short_stream_id(data: Json, previous: Json) -> int:
    index = 15
    data["entries"][index]["streams"][0] = data["entries"][index]["streams"][0][:30]
    return index


CORRUPTIONS: dict[str, tuple[Callable[[Json, Json], int], str]] = {
    "swap two streams' shards": (swap_shards, "expect_stream_token_on_its_shard"),
    "bad version": (bad_version, "expect_stream_id_version_one"),
    "duplicate stream": (duplicate_stream, "expect_stream_ids_unique_in_generation"),
    "token outside its range": (token_outside_range, "expect_stream_token_inside_entry_range"),
    "missing stream": (missing_stream, "expect_entry_stream_count_to_match_owner_shards"),
    "reused ID": (reused_id, "expect_no_stream_reused_from_previous_generation"),
    "entry without streams": (entry_without_streams, "expect_every_entry_to_have_streams"),
    "15-byte stream ID": (short_stream_id, "expect_stream_ids_to_be_sixteen_bytes"),
}


Corrupted = tuple[ValidationResult, dict[str, int], Json]


#: The engines, and the Spark engine on the Spark Connect server (the jobs' long-lived one).
VARIANTS = (*ENGINES, "spark on connect")


@pytest.fixture(scope="module")
def corrupted_by_engine(
    spark: SparkSession, spark_remote: SparkSession, tmp_path_factory: pytest.TempPathFactory
) -> dict[str, Corrupted]:
    previous = _generation(1)
    data = copy.deepcopy(_generation(2))
    touched = {name: corrupt(data, previous) for name, (corrupt, _) in CORRUPTIONS.items()}
    assert len(set(touched.values())) == len(touched), "one entry per corruption"
    sessions = {"sql": spark, "spark": spark, "spark on connect": spark_remote}
    results = {
        variant: validate_description(
            sessions[variant],
            columns_from_json(data),
            report_dir=tmp_path_factory.mktemp("corrupted") / "docs",
            nodes=NODES,
            previous=columns_from_json(previous),
            timestamp=T2,
            generation_id="corrupted",
            engine=variant.split()[0],
        )
        for variant in VARIANTS
    }
    return {variant: (result, touched, data) for variant, result in results.items()}


@pytest.fixture(scope="module", params=VARIANTS)
def corrupted(
    request: pytest.FixtureRequest, corrupted_by_engine: dict[str, Corrupted]
) -> Corrupted:
    return corrupted_by_engine[request.param]


@pytest.mark.parametrize("other", VARIANTS[1:])
def test_every_engine_gives_the_same_verdicts_and_rows(
    corrupted_by_engine: dict[str, Corrupted], other: str
) -> None:
    sql, spark = corrupted_by_engine["sql"][0], corrupted_by_engine[other][0]

    def verdicts(result: ValidationResult) -> list[tuple[str, str, bool, object]]:
        return [(c.suite, c.expectation, c.passed, c.observed) for c in result.checks]

    assert verdicts(sql) == verdicts(spark)
    assert {c.expectation for c in sql.failures} >= {e for _, e in CORRUPTIONS.values()}
    for mine, theirs in zip(sql.checks, spark.checks, strict=True):
        assert mine.samples == theirs.samples, mine.expectation
    assert sql.skipped == spark.skipped == []


@pytest.mark.parametrize("name", list(CORRUPTIONS))
def test_each_corruption_fails_its_expectation_naming_the_stream(
    corrupted: Corrupted, name: str
) -> None:
    result, touched, _ = corrupted
    expectation = CORRUPTIONS[name][1]
    failed = {check.expectation: check for check in result.failures}
    assert expectation in failed, result.summary
    assert expectation in result.summary
    entries = {row.get("entry_index") for row in failed[expectation].samples}
    assert touched[name] in entries, (name, failed[expectation].samples)


def test_failures_are_exactly_the_corrupted_rules(corrupted: Corrupted) -> None:
    result, _, data = corrupted
    assert not result.passed
    failed = {check.expectation for check in result.failures}
    # Side effects: wrong stream tokens also break shard colocation.
    # A range with fewer streams than its node's other ranges breaks that agreement too.
    assert failed <= {e for _, e in CORRUPTIONS.values()} | {
        "expect_index_bits_to_equal_entry_index",
        "expect_owner_ranges_to_agree_on_stream_count",
    }
    assert "expect_range_ends_strictly_increasing" not in failed
    assert "expect_table_row_count_to_equal" not in failed  # entries are all still there
    swapped = data["entries"][_entry_with_distinct_first_tokens(_generation(2), 1)]["streams"][0]
    assert swapped in result.summary  # the offending stream is named by its hex
    assert result.report_index.is_file()
    with pytest.raises(ValidationFailed, match="shard colocation"):
        result.raise_if_failed(ValidationFailed)


def test_unsorted_range_ends_fail_the_ordering_check(spark: SparkSession, tmp_path: Path) -> None:
    data = _generation(2)
    entries = data["entries"]
    entries[4], entries[5] = entries[5], entries[4]
    entries[2]["token_range_end"] = entries[1]["token_range_end"]
    result = validate_description(spark, columns_from_json(data), report_dir=tmp_path / "docs")
    failed = {check.expectation: check for check in result.failures}
    assert {"expect_range_ends_strictly_increasing", "expect_range_ends_unique"} <= set(failed)
    order = failed["expect_range_ends_strictly_increasing"].samples
    assert {row["entry_index"] for row in order} >= {2, 5}
    assert len(result.skipped) == 5  # no topology (4 checks), no previous generation
    assert not result.ring_known and "checks against the ring did not run" in result.summary


def test_cli_validate_names_failed_checks_and_exits_non_zero(
    spark: SparkSession, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import argparse
    import json

    from cdcgen.cli.generation_ops import register_subcommands

    data = _generation(2)
    duplicate_stream(data, data)
    (tmp_path / "gen.json").write_text(json.dumps(data))
    (tmp_path / "topo.json").write_text(json.dumps(nodes_to_json(NODES)))
    (tmp_path / "prev.json").write_text(json.dumps(_generation(1)))
    parser = argparse.ArgumentParser()
    register_subcommands(parser.add_subparsers())
    args = parser.parse_args(
        [
            "validate",
            str(tmp_path / "gen.json"),
            "--topology",
            str(tmp_path / "topo.json"),
            "--previous",
            str(tmp_path / "prev.json"),
            "--report",
            str(tmp_path / "report"),
        ]
    )
    status = args.func(args)
    out = capsys.readouterr().out
    assert status == 1
    assert (
        "FAILED stream IDs unique [generation_format.expect_stream_ids_unique_in_generation]" in out
    )
    assert (tmp_path / "report" / "index.html").is_file()


def test_cli_validate_of_a_small_description_starts_no_jvm(tmp_path: Path) -> None:
    """The command runs in a process whose Java cannot start: Spark would fail it.

    Its paths are relative to the working folder, as a user types them.
    """
    import json
    import os
    import subprocess
    import sys

    data = _generation(2)
    (tmp_path / "gen.json").write_text(json.dumps(data))
    (tmp_path / "topo.json").write_text(json.dumps(nodes_to_json(NODES)))
    command = "import sys; from cdcgen.cli import main; sys.exit(main())"
    args = ["generation", "validate", "gen.json", "--topology", "topo.json", "--report", "report"]
    env = {**os.environ, "JAVA_HOME": str(tmp_path / "no-java"), "CDCGEN_VALIDATION_ENGINE": ""}
    run = subprocess.run(
        [sys.executable, "-c", command, *args],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert run.returncode == 0, run.stderr
    assert "passed, 16 of 16 checks passed" in run.stdout
    assert (tmp_path / "report" / "index.html").is_file()
    env["CDCGEN_VALIDATION_ENGINE"] = "spark"  # the same command, made to need Spark, fails
    spark_run = subprocess.run(
        [sys.executable, "-c", command, *args],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert spark_run.returncode != 0


# --- generations made for another ring ---------------------------------------------------


def test_a_generation_made_for_another_ring_fails_the_ring_checks_only(
    spark: SparkSession, tmp_path: Path
) -> None:
    from cdcgen_dev.emulator.faults import FaultKind, GenerationFault, generation_ring

    # Made for a ring one token short, where node2 had twice its shards: a valid
    # description in itself, that only the ring the nodes report can refute.
    faults = [
        GenerationFault(FaultKind.RING_TOKEN_MISSING, 4),
        GenerationFault(FaultKind.SHARD_COUNT_CHANGED, 0),
    ]
    made_for = generation_ring(NODES, faults)
    assert sorted(n.shard_count for n in made_for) == [4, 4, 8]
    assert sum(len(n.tokens) for n in made_for) == 17
    description = make_generation(made_for, random.Random(3))
    result = validate_description(
        spark,
        DescriptionColumns.from_description(description),
        report_dir=tmp_path / "docs",
        nodes=Ring.of_nodes(NODES, RAFT_RING),
        generation_id="stale-ring",
    )
    failed = {check.check for check in result.failures}
    assert failed == {
        "entry count equals the ring's vnode count",
        "stream count equals the owner's shard count",
    }, result.summary
    assert "ring: validated against" in result.summary


def test_gossip_ring_checks_shard_counts_for_agreement_between_a_nodes_ranges(
    spark: SparkSession, tmp_path: Path
) -> None:
    data = _generation(2)
    data["entries"][2]["streams"].pop()
    ring = Ring(tuple(RingNode(n.name, n.tokens) for n in NODES), GOSSIP_RING)
    result = validate_description(
        spark, columns_from_json(data), report_dir=tmp_path / "docs", nodes=ring
    )
    failed = {check.check: check for check in result.failures}
    # The shorter range's streams also sit elsewhere (3 shards split a range otherwise).
    assert set(failed) - {"shard colocation"} == {"a node's ranges hold equally many streams"}
    agreement = failed["a node's ranges hold equally many streams"].samples
    assert {row["entry_index"] for row in agreement if row["stream_count"] == 3} == {2}
    assert result.skipped[0] == (
        "generation_coverage: stream count equals the owner's shard count (needs shard_counts)"
    )
    assert len(result.skipped) == 2  # and the reuse check: no previous generation given
