"""The lake partition of an extracted generation, and the suite files (no Spark here)."""

from __future__ import annotations

import json
import random
from datetime import UTC, datetime
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from cdcgen.core.generation_arrays import build_generation_arrays
from cdcgen.core.ring import Ring
from cdcgen.core.topology import Node
from cdcgen.extract.description_columns import DescriptionColumns
from cdcgen.extract.lake import (
    DESCRIPTION_FILE,
    ArtifactError,
    list_artifacts,
    partition_dir,
    previous_artifact,
    read_artifact,
    write_generation,
)
from cdcgen.extract.streams_table import STREAMS_SCHEMA, flatten_generation
from cdcgen.validation.suites import (
    GENERATION_SUITES,
    SuiteError,
    expectations_dir,
    load_suite,
    load_suites,
)

WHEN = datetime(2026, 11, 22, 8, 0, 0, 5000, tzinfo=UTC)
NODES = [Node("a", 4, 12, (-(10**18), 10**17)), Node("b", 2, 0, (5 * 10**17,))]


def _columns(seed: int = 1) -> DescriptionColumns:
    return DescriptionColumns.from_arrays(build_generation_arrays(NODES, random.Random(seed)))


def test_partition_holds_parquet_description_and_manifest(tmp_path: Path) -> None:
    columns = _columns()
    artifact = write_generation(tmp_path, columns, WHEN, "gen-a", nodes=NODES, rows_per_file=4)
    millis = 1_795_334_400_005  # 2026-11-22T08:00:00.005Z
    assert artifact.timestamp_ms == millis and artifact.timestamp == WHEN
    assert artifact.directory == partition_dir(tmp_path, millis)
    assert artifact.label == f"generation_ts={millis}"
    assert len(artifact.files) == 3  # 10 streams, 4 per file
    table = pq.read_table([artifact.directory / f for f in artifact.files], schema=STREAMS_SCHEMA)
    assert table.equals(flatten_generation(columns, WHEN, "gen-a"))
    again = read_artifact(artifact.directory)
    assert again == artifact
    assert again.read_description().blob_data == columns.blob_data
    assert again.read_ring() == Ring.of_nodes(NODES)
    assert not list(tmp_path.glob("generations/.*"))  # no staging or trash left behind


def test_rewriting_a_partition_replaces_it_whole(tmp_path: Path) -> None:
    write_generation(tmp_path, _columns(1), WHEN, "first", rows_per_file=2)
    second = write_generation(tmp_path, _columns(2), WHEN, "second")
    files = sorted(p.name for p in second.directory.glob("*.parquet"))
    assert files == ["part-00000.parquet"]
    assert read_artifact(second.directory).generation_id == "second"


def test_a_changed_description_is_refused(tmp_path: Path) -> None:
    artifact = write_generation(tmp_path, _columns(), WHEN, "g")
    path = artifact.directory / DESCRIPTION_FILE
    data = json.loads(path.read_text())
    data["entries"][0]["streams"].reverse()
    path.write_text(json.dumps(data))
    with pytest.raises(ArtifactError, match="changed since extraction"):
        artifact.read_description()


def test_missing_manifest_means_not_extracted(tmp_path: Path) -> None:
    (tmp_path / "generations" / "generation_ts=5").mkdir(parents=True)
    with pytest.raises(ArtifactError, match="extract step"):
        read_artifact(tmp_path / "generations" / "generation_ts=5")
    assert list_artifacts(tmp_path) == []


def test_previous_artifact_is_the_newest_older_one(tmp_path: Path) -> None:
    stamps = [datetime(2026, 1, d, tzinfo=UTC) for d in (1, 3, 2)]
    for stamp in stamps:
        write_generation(tmp_path, _columns(), stamp, stamp.isoformat())
    later = write_generation(tmp_path, _columns(), datetime(2026, 1, 4, tzinfo=UTC), "x")
    found = previous_artifact(tmp_path, later.timestamp_ms)
    assert found is not None and found.generation_id == stamps[1].isoformat()
    assert previous_artifact(tmp_path, list_artifacts(tmp_path)[0].timestamp_ms) is None


def test_suites_load_and_skip_checks_whose_inputs_are_missing() -> None:
    suites = load_suites()
    assert [s.path.name for s in suites] == list(GENERATION_SUITES.files)
    assert {s.batch for s in suites} == {"streams", "entries"}
    skipped = [name for s in suites for name in s.skipped]
    assert any("needs topology" in name for name in skipped)
    assert any("needs previous" in name for name in skipped)
    everything = load_suites(available={"topology", "shard_counts", "previous"})
    assert all(not s.skipped for s in everything)
    # Gossip: the ring is known but not its shard counts; only that one check waits for them.
    gossip = [n for s in load_suites(available={"topology", "previous"}) for n in s.skipped]
    assert gossip == ["stream count equals the owner's shard count (needs shard_counts)"]


def test_every_suite_expectation_names_a_registered_gx_type() -> None:
    from great_expectations.expectations.registry import get_expectation_impl

    import cdcgen.validation.generation_expectations  # noqa: F401

    for suite in load_suites(available={"topology", "shard_counts", "previous"}):
        for expectation in suite.expectations:
            assert get_expectation_impl(expectation["type"]) is not None
            assert expectation.get("meta", {}).get("check"), expectation


def test_a_bad_suite_is_an_error_naming_the_file(tmp_path: Path) -> None:
    path = tmp_path / "s.json"
    path.write_text(json.dumps({"name": "s", "meta": {"batch": "rows"}, "expectations": []}))
    with pytest.raises(SuiteError, match=r"meta\.batch"):
        load_suite(path)
    path.write_text(
        json.dumps(
            {
                "name": "s",
                "meta": {"batch": "streams"},
                "expectations": [{"type": "x", "meta": {"requires": ["moon"]}}],
            }
        )
    )
    with pytest.raises(SuiteError, match="moon"):
        load_suite(path)
    assert expectations_dir({"CDCGEN_EXPECTATIONS_DIR": str(tmp_path)}) == tmp_path


def test_a_tablets_stream_set_has_its_own_partition_per_table(tmp_path: Path) -> None:
    vnodes = write_generation(tmp_path, _columns(1), WHEN, "gen")
    orders = write_generation(tmp_path, _columns(2), WHEN, "log-id-1", table="shop.orders")
    items = write_generation(tmp_path, _columns(3), WHEN, "log-id-2", table="shop.items")
    # Same millisecond, three different partitions: nothing overwrote anything.
    assert len({vnodes.directory, orders.directory, items.directory}) == 3
    assert orders.directory == partition_dir(tmp_path, orders.timestamp_ms, "shop.orders")
    assert (vnodes.layout, orders.layout) == ("vnodes", "tablets")
    assert orders.label == f"table=shop.orders/generation_ts={orders.timestamp_ms}"
    assert orders.lake == vnodes.lake == tmp_path
    assert read_artifact(orders.directory) == orders
    assert [a.generation_id for a in list_artifacts(tmp_path)] == ["gen"]
    assert [a.generation_id for a in list_artifacts(tmp_path, "shop.items")] == ["log-id-2"]
    later = datetime(2026, 11, 23, tzinfo=UTC)
    split = write_generation(tmp_path, _columns(4), later, "log-id-1", table="shop.orders")
    found = previous_artifact(tmp_path, split.timestamp_ms, "shop.orders")
    assert found == orders


def test_suites_for_tablets_leave_out_vnode_rules_and_add_tablet_rules() -> None:
    def checks(layout: str) -> set[str]:
        suites = load_suites(available={"topology", "previous"}, layout=layout)
        return {str(e["meta"]["check"]) for s in suites for e in s.expectations}

    vnodes, tablets = checks("vnodes"), checks("tablets")
    vnode_only = {"shard colocation", "index bits equal the entry index"}
    tablet_only = {"one stream per tablet", "stream on its tablet's last token"}
    assert vnode_only <= vnodes and not vnode_only & tablets
    assert tablet_only <= tablets and not tablet_only & vnodes
    assert {"vnode colocation", "stream IDs unique", "range ends unique"} <= vnodes & tablets
    # A rule of the other layout does not apply: it is not reported as skipped either.
    assert not any("shard" in s for suite in load_suites(layout="tablets") for s in suite.skipped)
    with pytest.raises(SuiteError, match="unknown stream layout"):
        load_suites(layout="vnode")


def test_publish_records_the_ring_validate_drew_in_the_same_run(tmp_path: Path) -> None:
    """Publish reuses the validated record's ring and counts (it publishes exactly what
    was validated); a manual run (no run id) draws them from the lake again."""
    import shutil

    from cdcgen.config import PipelineConfig
    from cdcgen.core.generation import Generation
    from cdcgen.pipeline.outcomes import ValidationOutcome
    from cdcgen.pipeline.reporting import record_generation
    from cdcgen.reports.record_json import loads

    config = PipelineConfig(lake_path=tmp_path / "lake", report_dir=tmp_path / "reports")
    artifact = write_generation(config.lake_path, _columns(), WHEN, "gen-a", nodes=NODES)
    generation = Generation(WHEN, "gen-a")
    outcome = ValidationOutcome(generation, passed=True, summary="ok")
    record_generation(config, generation, artifact.directory, outcome, published=False, run_id="r1")
    shutil.rmtree(artifact.directory)  # publish must not need the description again

    def published(run_id: str) -> tuple[int, int | None]:
        directory = artifact.directory
        record_generation(config, generation, directory, outcome, published=True, run_id=run_id)
        (path,) = (config.report_dir / "runs").glob(f"*-{run_id or 'manual'}.json")
        record = loads(path.read_text(encoding="utf-8"))
        assert record.published  # type: ignore[union-attr]
        counts = record.counts  # type: ignore[union-attr]
        return len(record.ring), None if counts is None else counts.streams  # type: ignore[union-attr]

    ranges = sum(len(node.tokens) for node in NODES)
    assert published("r1") == (ranges, artifact.stream_count)
    assert published("") == (0, None)  # a manual run reads the (now missing) lake
