"""The extract job of ``spark/extract_generation.py``: writes, reads back, is idempotent."""

from __future__ import annotations

import json
import random
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from cdcgen.config import PipelineConfig
from cdcgen.core.generation import Generation
from cdcgen.core.ring import RAFT_RING, Ring
from cdcgen.core.topology import Node, make_generation
from cdcgen.core.topology_json import description_to_json, nodes_to_json
from cdcgen.generation_lake.description_json import columns_to_json
from cdcgen.generation_lake.lake_tables import artifact_at
from cdcgen.generation_lake.ring_records import LakeRingRecords
from cdcgen.generation_lake.spark_extract import read_streams
from cdcgen.jobs.extract_generation import build_parser, run
from cdcgen.validation.generation_suite import validate_generation
from cdcgen_dev.sandbox import sandbox_config

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytest_plugins = ("conftest_spark",)
pytestmark = pytest.mark.integration

NODES = [Node("a", 3, 12, (-(10**18), 4 * 10**17)), Node("b", 2, 0, (10**18,))]


def test_job_writes_the_partition_and_a_rerun_replaces_it_identically(
    spark: SparkSession, tmp_path: Path
) -> None:
    description = description_to_json(make_generation(NODES, random.Random(9)))
    (tmp_path / "d.json").write_text(json.dumps(description))
    (tmp_path / "t.json").write_text(json.dumps(nodes_to_json(NODES)))
    argv = [
        "--description",
        str(tmp_path / "d.json"),
        "--generation-ts",
        "2026-11-22T10:00:00.250Z",
        "--generation-id",
        "gen-9",
        "--lake",
        str(tmp_path / "lake"),
        "--topology",
        str(tmp_path / "t.json"),
    ]
    first = run(argv)
    assert first["rows_read_back"] == first["stream_count"] == 3 * 2 + 2  # shards x vnodes
    partition = Path(first["partition"])
    assert partition.name == f"generation_ts={first['timestamp_ms']}"
    artifact = artifact_at(partition)
    assert first["lake_format"] == "delta" and first["lake_version"] == artifact.version
    assert artifact.has_topology and artifact.read_ring() == Ring.of_nodes(NODES)
    assert columns_to_json(artifact.read_description()) == description  # the exact artifact
    rows = read_streams(spark, artifact).orderBy("entry_index", "shard").collect()
    assert [r.stream_id_hex for r in rows] == [
        s for e in description["entries"] for s in e["streams"]
    ]

    second = run(argv)
    assert second["description_sha256"] == first["description_sha256"]
    assert second["lake_version"] == first["lake_version"] + 1  # one commit per run
    again = artifact_at(partition)
    assert set(again.files).isdisjoint(artifact.files)  # the commit replaced the files
    assert read_streams(spark, again).orderBy("entry_index", "shard").collect() == rows


def test_a_ring_first_read_after_a_node_left_is_the_generations_but_for_its_ranges(
    spark: SparkSession, tmp_path: Path
) -> None:
    """ScyllaDB makes no generation when a node leaves. A pipeline that first reads the
    ring after a leave (deployed on a cluster that lost nodes since its last join)
    records a ring short of the generation's range ends: the job records them as the
    left nodes' and the generation passes, but for the left ranges' stream counts."""
    gone = Node("c", 4, 12, (-(10**17), 7 * 10**17))
    description = description_to_json(make_generation([*NODES, gone], random.Random(9)))
    (tmp_path / "d.json").write_text(json.dumps(description))
    lake = tmp_path / "lake"
    generation = Generation(datetime(2026, 11, 22, 10, 0, tzinfo=UTC), "gen-left")
    live = Ring.of_nodes(NODES, RAFT_RING)
    assert LakeRingRecords(lake).record(generation, live)
    argv = [
        "--description", str(tmp_path / "d.json"), "--generation-ts", "2026-11-22T10:00:00Z",
        "--generation-id", generation.id, "--lake", str(lake),
    ]  # fmt: skip
    artifact = artifact_at(Path(run(argv)["partition"]))
    ring = artifact.read_ring()
    assert ring is not None and ring.vnode_count == 5 and ring.left_tokens == 2
    assert "5 tokens (2 of them of nodes that left since)" in ring.describe()
    config = sandbox_config("t_extract_", lake_path=lake, report_dir=tmp_path / "docs")
    result = validate_generation(config, artifact, spark=spark, previous=None)
    assert result.passed, result.summary
    assert "2 nodes, 5 tokens (2 of them of nodes that left since)" in result.summary

    # Against the live ring as it was read, the generation is refused: not optimal.
    refused = validate_generation(config, artifact, spark=spark, nodes=live, previous=None)
    assert {c.check for c in refused.failures} >= {"entry count equals the ring's vnode count"}


def test_the_dag_names_the_generation_and_the_job_reads_everything_else_from_its_env() -> None:
    from cdcgen.core.generation import Generation
    from cdcgen.jobs.extract_generation import arguments, generation_of

    generation = Generation(datetime(2026, 11, 22, 10, 0, 0, 250000, tzinfo=UTC), "abc", "ks.t")
    args = build_parser().parse_args(arguments(generation))
    assert generation_of(args) == generation and args.description is None
    assert not any(
        a.startswith("--contact") or a.startswith("--source") for a in arguments(generation)
    )


def test_rows_the_source_reader_refuses_are_extracted_and_fail_validation_by_name(
    spark: SparkSession, tmp_path: Path, cassandra_single: Any
) -> None:
    from cdcgen.adapters.cql import client_for
    from cdcgen.core.generation import SourceMode
    from cdcgen.validation.generation_suite import validate_generation
    from cdcgen_dev.emulator import FaultKind, GenerationFault, SandboxCluster
    from cdcgen_dev.emulator.schema_setup import drop_keyspaces

    prefix = "t_refused_"
    config = sandbox_config(
        prefix,
        contact_points=tuple(cassandra_single.contact_points),
        port=cassandra_single.port,
        source_mode=SourceMode.RAFT,
        lake_path=tmp_path / "lake",
        report_dir=tmp_path / "reports",
    )
    with client_for(config) as client:
        drop_keyspaces(client, config.source_schema)
        cluster = SandboxCluster.from_config(client, config)
        joined = cluster.join_node(
            SourceMode.RAFT, seed=3, faults=[GenerationFault(FaultKind.DUPLICATE_STREAM, 1)]
        )
    assert joined.generation is not None
    ms = int(joined.generation.timestamp.timestamp() * 1000)
    summary = run(
        ["--generation-ts-ms", str(ms), "--generation-id", str(joined.generation.id)],
        PipelineConfig.from_env(config.to_env()),  # what the DAG hands the job
    )
    artifact = artifact_at(Path(summary["partition"]))
    assert artifact.source_problem and str(joined.generation.id) in artifact.source_problem
    result = validate_generation(config, artifact, spark=spark)
    failed = {check.check for check in result.failures}
    assert "the source's rows form a valid description" in failed, result.summary
    assert "stream IDs unique" in failed  # ... and the rows themselves show where
    assert artifact.source_problem in result.summary
    pages = list(result.report_index.parent.glob("validations/generation_coverage/**/*.html"))
    assert pages and "The source reader accepted the stored rows" in pages[0].read_text()
