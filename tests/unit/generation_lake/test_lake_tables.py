"""The lake partition of an extracted generation, and the suite files (no Spark here)."""

from __future__ import annotations

import json
import random
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from lake_files import old_generation_partition

from cdcgen.adapters.delta_tables import delta_table
from cdcgen.adapters.lake_store import LakeLocation
from cdcgen.core.generation import Generation
from cdcgen.core.generation_arrays import build_generation_arrays
from cdcgen.core.ring import Ring
from cdcgen.core.time import from_millis
from cdcgen.core.topology import Node
from cdcgen.generation_lake.description_columns import DescriptionColumns
from cdcgen.generation_lake.errors import ArtifactError
from cdcgen.generation_lake.generation_migration import migrate_generations
from cdcgen.generation_lake.generation_writes import write_generation
from cdcgen.generation_lake.lake_tables import (
    LocalGenerationLake,
    artifact_at,
    list_artifacts,
    previous_artifact,
    read_artifact,
)
from cdcgen.generation_lake.streams_table import STREAMS_SCHEMA, flatten_generation
from cdcgen.validation.errors import SuiteError
from cdcgen.validation.suites import GENERATION_SUITES, expectations_dir, load_suite, load_suites

WHEN = datetime(2026, 11, 22, 8, 0, 0, 5000, tzinfo=UTC)
NODES = [Node("a", 4, 12, (-(10**18), 10**17)), Node("b", 2, 0, (5 * 10**17,))]


def _columns(seed: int = 1) -> DescriptionColumns:
    return DescriptionColumns.from_arrays(build_generation_arrays(NODES, random.Random(seed)))


def _read(files: Sequence[LakeLocation]) -> pa.Table:
    """The rows of ``files`` as pyarrow reads them (on disk or on S3)."""
    filesystem = files[0].arrow()[0]
    paths = [f.arrow()[1] for f in files]
    return pq.ParquetDataset(paths, filesystem=filesystem, schema=STREAMS_SCHEMA).read()


def test_an_extraction_is_one_commit_of_rows_documents_and_manifest(
    lake_root: LakeLocation,
) -> None:
    columns = _columns()
    artifact = write_generation(lake_root, columns, WHEN, "gen-a", nodes=NODES, rows_per_file=4)
    millis = 1_795_334_400_005  # 2026-11-22T08:00:00.005Z
    assert artifact.timestamp_ms == millis and artifact.timestamp == WHEN
    assert artifact.directory == lake_root / "generations" / f"generation_ts={millis}"
    assert artifact.label == f"generation_ts={millis}"
    assert len(artifact.files) == 3  # 10 streams, 4 per file
    assert all(f.uri.startswith(artifact.directory.uri) for f in artifact.files)
    assert _read(artifact.files).equals(flatten_generation(columns, WHEN, "gen-a"))
    again = read_artifact(lake_root, artifact.generation)
    assert again == artifact and again.version == 1  # 0: the table's creation
    assert again.read_description().blob_data == columns.blob_data
    assert again.read_ring() == Ring.of_nodes(NODES)
    assert artifact_at(artifact.directory) == artifact
    # delta-rs reads the same rows (what a user with no Spark gets), partition included.
    rows = delta_table(lake_root / "generations").to_pyarrow_dataset().to_table()
    assert rows.num_rows == 10 and set(rows["generation_ts"].to_pylist()) == {millis}
    # The log's sizes and row counts (the writer's own figures) are the files'.
    actions = delta_table(lake_root / "generations").get_add_actions(flatten=True)
    adds = pa.table(actions).to_pylist()
    for add, file in zip(sorted(adds, key=lambda a: a["path"]), artifact.files, strict=True):
        filesystem, path = file.arrow()
        assert add["size_bytes"] == filesystem.get_file_info(path).size
        assert add["num_records"] == pq.read_metadata(path, filesystem=filesystem).num_rows


def test_rewriting_a_partition_replaces_it_whole_and_keeps_the_version_before(
    lake_root: LakeLocation,
) -> None:
    first = write_generation(lake_root, _columns(1), WHEN, "first", rows_per_file=2)
    second = write_generation(lake_root, _columns(2), WHEN, "second")
    assert second.version == first.version + 1 and len(second.files) == 1
    assert read_artifact(lake_root, second.generation).generation_id == "second"
    # Time travel: the version before still holds the first extraction, whole.
    before = read_artifact(lake_root, second.generation, first.version)
    assert before == first and before.read_description().blob_data == _columns(1).blob_data


def _extract_killed_at_the_commit_point(lake: LakeLocation) -> None:
    """A writer process that dies by SIGKILL where its commit would be made: its files
    are written, and nothing of it runs after (no cleanup, no except block)."""
    import os
    import signal

    from cdcgen.generation_lake import generation_writes

    def killed(*args: object) -> int:
        os.kill(os.getpid(), signal.SIGKILL)
        raise AssertionError("still alive after SIGKILL")

    generation_writes.commit_files = killed  # type: ignore[assignment]
    write_generation(lake, _columns(2), WHEN, "second")


def test_a_killed_extraction_leaves_the_previous_version_whole(lake_root: LakeLocation) -> None:
    """Killed at the commit point: its files are written, its commit is not made."""
    import multiprocessing
    import signal

    first = write_generation(lake_root, _columns(1), WHEN, "first")
    process = multiprocessing.get_context("spawn").Process(
        target=_extract_killed_at_the_commit_point, args=(lake_root,)
    )
    process.start()
    process.join(60)
    assert process.exitcode == -signal.SIGKILL
    written = [n for n in first.directory.children() if n.endswith(".parquet")]
    assert len(written) == 2  # the killed one's file is there
    assert read_artifact(lake_root, first.generation) == first  # and invisible
    assert read_artifact(lake_root, first.generation).read_description().blob_data == (
        _columns(1).blob_data
    )
    again = write_generation(lake_root, _columns(2), WHEN, "second")
    redone = write_generation(lake_root, _columns(2), WHEN, "second")
    assert again.version == first.version + 1  # the killed writer committed nothing
    assert read_artifact(lake_root, first.generation) == redone  # same content each run
    assert _read(again.files).equals(_read(redone.files))


def test_previous_artifact_is_the_newest_older_one(tmp_path: Path) -> None:
    for day in (1, 3, 2):
        stamp = datetime(2026, 1, day, tzinfo=UTC)
        write_generation(tmp_path, _columns(), stamp, stamp.isoformat())
    later = write_generation(tmp_path, _columns(), datetime(2026, 1, 4, tzinfo=UTC), "x")
    found = previous_artifact(tmp_path, later.timestamp_ms)
    assert found is not None and found.generation_id == "2026-01-03T00:00:00+00:00"
    assert previous_artifact(tmp_path, list_artifacts(tmp_path)[0].timestamp_ms) is None


def test_a_changed_description_is_refused(lake_root: LakeLocation) -> None:
    artifact = write_generation(lake_root, _columns(), WHEN, "g")
    path = artifact.description_path
    data = json.loads(path.read_bytes())
    data["entries"][0]["streams"].reverse()
    path.write_bytes(json.dumps(data).encode())
    with pytest.raises(ArtifactError, match="changed since extraction"):
        artifact.read_description()


def test_publication_reads_the_validated_version_and_digest(lake_root: LakeLocation) -> None:
    first = write_generation(lake_root, _columns(1), WHEN, "g")
    lake = LocalGenerationLake(lake_root)
    rows = lake.stream_rows(first.generation, first.version, first.description_sha256)
    write_generation(lake_root, _columns(2), WHEN, "g")  # extracted again after validation
    assert lake.stream_rows(first.generation, first.version, first.description_sha256) == rows
    with pytest.raises(ArtifactError, match="validation checked"):
        lake.stream_rows(first.generation, None, first.description_sha256)


def test_nothing_extracted_is_an_error_naming_the_extract_step(tmp_path: Path) -> None:
    generation = Generation(from_millis(5), "g")
    with pytest.raises(ArtifactError, match="extract"):
        read_artifact(tmp_path, generation)
    write_generation(tmp_path, _columns(), WHEN, "g")
    with pytest.raises(ArtifactError, match="extract step"):
        read_artifact(tmp_path, generation)
    assert [a.generation_id for a in list_artifacts(tmp_path)] == ["g"]
    with pytest.raises(ArtifactError, match=r"not a keyspace\.table"):
        write_generation(tmp_path, _columns(), WHEN, "g", table="x' OR 1=1 --")


def test_a_parquet_lake_of_an_earlier_version_is_refused_then_migrated(tmp_path: Path) -> None:
    old = old_generation_partition(tmp_path, _columns(1), 1000, "old-vnodes", Ring.of_nodes(NODES))
    old_generation_partition(
        tmp_path, _columns(2), 1000, "old-tablets", Ring.of_nodes(NODES), "shop.orders"
    )
    with pytest.raises(ArtifactError, match="cdcgen lake migrate"):
        write_generation(tmp_path, _columns(), WHEN, "g")
    with pytest.raises(ArtifactError, match="cdcgen lake migrate"):
        list_artifacts(tmp_path)
    done = migrate_generations(tmp_path)
    assert [d["generation"] for d in done] == [
        "generation_ts=1000",
        "table=shop.orders/generation_ts=1000",
    ]
    assert migrate_generations(tmp_path) == []  # nothing left to convert
    vnodes = read_artifact(tmp_path, Generation(from_millis(1000), "old-vnodes"))
    assert vnodes.read_description().blob_data == _columns(1).blob_data
    assert vnodes.read_ring() == Ring.of_nodes(NODES)
    assert sorted(p.name for p in old.iterdir()) == sorted(f.name for f in vnodes.files)
    tablets = list_artifacts(tmp_path, "shop.orders")
    assert [a.generation_id for a in tablets] == ["old-tablets"]
    assert not (tmp_path / "generations" / "table=shop.orders").exists()


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
            assert get_expectation_impl(expectation.type) is not None
            assert expectation.config.get("meta", {}).get("check"), expectation


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
    assert orders.directory.path == (
        tmp_path / "stream_sets" / "cdc_table=shop.orders" / f"generation_ts={orders.timestamp_ms}"
    )
    assert (vnodes.layout, orders.layout) == ("vnodes", "tablets")
    assert orders.label == f"table=shop.orders/generation_ts={orders.timestamp_ms}"
    assert orders.lake == vnodes.lake == LakeLocation.of(tmp_path)
    # Read later, the same extraction (a later commit to the table did not touch it).
    assert read_artifact(tmp_path, orders.generation).manifest() == orders.manifest()
    assert artifact_at(orders.directory).files == orders.files
    assert [a.generation_id for a in list_artifacts(tmp_path)] == ["gen"]
    assert [a.generation_id for a in list_artifacts(tmp_path, "shop.items")] == ["log-id-2"]
    later = datetime(2026, 11, 23, tzinfo=UTC)
    split = write_generation(tmp_path, _columns(4), later, "log-id-1", table="shop.orders")
    found = previous_artifact(tmp_path, split.timestamp_ms, "shop.orders")
    assert found is not None and found.manifest() == orders.manifest()


def test_suites_for_tablets_leave_out_vnode_rules_and_add_tablet_rules() -> None:
    def checks(layout: str) -> set[str]:
        suites = load_suites(available={"topology", "previous"}, layout=layout)
        return {str(e.config["meta"]["check"]) for s in suites for e in s.expectations}

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
    from cdcgen.reports.record_store import read_record

    config = PipelineConfig(lake_path=tmp_path / "lake", report_dir=tmp_path / "reports")
    artifact = write_generation(config.lake_path, _columns(), WHEN, "gen-a", nodes=NODES)
    generation = Generation(WHEN, "gen-a")
    outcome = ValidationOutcome(generation, passed=True, summary="ok")
    record_generation(config, generation, outcome, published=False, run_id="r1")
    shutil.rmtree(artifact.description_path.path.parent)  # publish must not need it again

    def published(run_id: str) -> tuple[int, int | None]:
        record_generation(config, generation, outcome, published=True, run_id=run_id)
        (path,) = (config.report_dir / "runs").glob(f"*-{run_id or 'manual'}.json")
        record = read_record(config.report_dir, path)
        assert record.published  # type: ignore[union-attr]
        counts = record.counts  # type: ignore[union-attr]
        return len(record.ring), None if counts is None else counts.streams  # type: ignore[union-attr]

    ranges = sum(len(node.tokens) for node in NODES)
    assert published("r1") == (ranges, artifact.stream_count)
    assert published("") == (0, None)  # a manual run reads the (now missing) lake


def _extract_many(lake: LakeLocation, writer: int) -> list[tuple[int, list[str]]]:
    """One writer process: five generations of its own, the version each commit got."""
    done = []
    for i in range(5):
        moment = datetime(2026, 11, 22, tzinfo=UTC) + timedelta(minutes=i, seconds=writer)
        artifact = write_generation(lake, _columns(writer), moment, f"w{writer}-{i}")
        done.append((artifact.version, [f.uri for f in artifact.files]))
    return done


def test_concurrent_extractions_each_know_the_version_of_their_own_commit(
    lake_root: LakeLocation,
) -> None:
    """Mapped extract tasks of a fresh lake create the table and commit to it at once:
    each gets its own commit's version (delta-rs's history() numbers commits off by one
    while others commit, and fails a racing creator now and then). On S3 the commits
    are conditional puts: none overwrites another's."""
    import multiprocessing

    with multiprocessing.get_context("spawn").Pool(3) as pool:
        results = pool.starmap(_extract_many, [(lake_root, w) for w in (1, 2, 3)])
    versions = [version for done in results for version, _ in done]
    assert len(set(versions)) == 15  # 15 commits, each its own version
    assert len(list_artifacts(lake_root)) == 15
    root = lake_root / "generations"

    def uris(version: int) -> set[str]:
        return {LakeLocation.of(u).uri for u in delta_table(root, version).file_uris()}

    for done in results:
        for version, files in done:
            assert set(files) <= uris(version)
            assert not set(files) & uris(version - 1)
