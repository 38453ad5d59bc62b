"""Retention and paging: a task's work on the report site does not grow with history."""

from __future__ import annotations

import dataclasses
import json
import multiprocessing
import os
import re
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from cdcgen.adapters.files import write_atomic
from cdcgen.config import DEFAULT_REPORT_KEEP_RUNS, PipelineConfig
from cdcgen.errors import ConfigError
from cdcgen.reports import catalog, record_store, site
from cdcgen.reports.index_page import RUNS_PER_PAGE, render_index_pages
from cdcgen.reports.owners import owners
from cdcgen.reports.records import (
    ChangesReport,
    GenerationReport,
    RunRecord,
    RunStatus,
    generation_page_name,
    record_key,
)
from cdcgen.reports.sample import sample_generation
from cdcgen.reports.site import (
    GENERATIONS_DIR,
    build_site,
    record_replication,
    record_run,
    save_record,
    update_site,
)
from unit.reports.test_replication_page import record as replication_record

T0 = datetime(2026, 11, 1, 12, 0, tzinfo=UTC)


def small_record(n: int) -> RunRecord:
    """Run ``n`` (later runs later): every tenth a generation, the others changes runs."""
    at = T0 + timedelta(minutes=n)
    if n % 10 == 0:
        return GenerationReport(
            f"gen-{n}", at, RunStatus.SUCCESS, created_at=at, dag_id="g", run_id=f"r{n}"
        )
    return ChangesReport(RunStatus.SUCCESS, created_at=at, dag_id="c", run_id=f"r{n}")


def record_files(report_dir: Path) -> list[Path]:
    return [p for p in (report_dir / "runs").glob("*.json") if not p.name.startswith(".")]


def test_a_save_reads_only_its_record_and_writes_a_bounded_set_of_pages(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    keep = 500
    for n in range(3000):
        save_record(tmp_path, small_record(n))
    record_run(tmp_path, small_record(3000), keep_runs=keep)  # reads the history once
    assert len(record_files(tmp_path)) == keep
    pages = {p.name for p in tmp_path.glob("index*.html")}
    assert pages == {"index.html", *(f"index-{n}.html" for n in range(2, 6))}
    # The oldest went, their generations' pages with them; the newest stayed.
    assert not (tmp_path / GENERATIONS_DIR / generation_page_name(small_record(0))).exists()
    assert "r3000" in (tmp_path / "index.html").read_text()

    parsed: list[str] = []
    written: list[str] = []
    read_json, write = catalog.read_record_json, site.write_atomic
    monkeypatch.setattr(
        catalog, "read_record_json", lambda p: (parsed.append(p.name), read_json(p))[1]
    )
    monkeypatch.setattr(site, "write_atomic", lambda p, t: (written.append(p.name), write(p, t))[1])
    for n in range(3001, 3021):
        parsed.clear()
        written.clear()
        record_run(tmp_path, small_record(n), keep_runs=keep)
        assert len(parsed) == 1, parsed  # the record just saved, never the history
        # its generation's page (if any), changes, replication, the index pages
        assert len(written) <= 3 + keep // RUNS_PER_PAGE, written
        assert len(record_files(tmp_path)) == keep
    newest = (tmp_path / "index.html").read_text()
    assert "r3020" in newest and newest.count("<tr>") == RUNS_PER_PAGE + 1
    assert not (tmp_path / "index-6.html").exists()


def test_retention_never_removes_the_record_just_saved(tmp_path: Path) -> None:
    for n in range(1, 4):
        record_run(tmp_path, small_record(n), keep_runs=2)
    late_but_old = small_record(0)  # recorded now, about the oldest run
    record_run(tmp_path, late_but_old, keep_runs=2)
    names = {p.name for p in record_files(tmp_path)}
    assert len(names) == 2
    assert any("gen-0" in name for name in names)
    assert (tmp_path / GENERATIONS_DIR / generation_page_name(late_but_old)).exists()


def test_index_pages_hold_a_bounded_number_of_runs_and_link_each_other(tmp_path: Path) -> None:
    records = [small_record(n) for n in range(1, 2 * RUNS_PER_PAGE + 51)]
    html = render_index_pages(records)
    assert len(html) == 3
    assert [page.count("<tr>") - 1 for page in html] == [RUNS_PER_PAGE, RUNS_PER_PAGE, 50]
    assert 'href="index-2.html"' in html[0] and 'href="index.html"' in html[1]
    assert f">r{2 * RUNS_PER_PAGE + 50}<" in html[0] and ">r1<" in html[2]  # newest first
    for record in records:
        save_record(tmp_path, record)
    build_site(tmp_path)
    for page in tmp_path.glob("index*.html"):
        for href in re.findall(r'href="([^"#:]+)"', page.read_text()):
            assert (tmp_path / href).exists(), (page.name, href)


def test_the_report_view_updates_only_the_pages_of_new_records(tmp_path: Path) -> None:
    for n in range(0, 50, 10):
        save_record(tmp_path, small_record(n))
    assert len(build_site(tmp_path).generation_pages) == 5
    save_record(tmp_path, small_record(50))
    updated = update_site(tmp_path)
    assert [p.name for p in updated.generation_pages] == [generation_page_name(small_record(50))]
    assert "r50" in updated.index.read_text()
    assert update_site(tmp_path).generation_pages == ()  # nothing new: no page drawn


def links(report_dir: Path) -> list[tuple[str, str]]:
    """(page, href) of every relative link on the index pages."""
    return [
        (page.name, href)
        for page in report_dir.glob("index*.html")
        for href in re.findall(r'href="([^"#:]+)"', page.read_text())
    ]


def listed_runs(report_dir: Path) -> list[str]:
    """The run ids the index pages list, one per row."""
    return [
        run
        for page in report_dir.glob("index*.html")
        for run in re.findall(r"<td>(r\d+)</td>", page.read_text())
    ]


def test_retention_leaves_no_link_broken(tmp_path: Path) -> None:
    for n in range(0, 3 * RUNS_PER_PAGE):
        save_record(tmp_path, small_record(n))
    record_run(tmp_path, small_record(3 * RUNS_PER_PAGE), keep_runs=RUNS_PER_PAGE + 1)
    assert {p.name for p in tmp_path.glob("index*.html")} == {"index.html", "index-2.html"}
    assert not [(page, href) for page, href in links(tmp_path) if not (tmp_path / href).exists()]
    assert not [(page, href) for page, href in links(tmp_path) if owners(href) is None]  # a 404
    assert sorted(listed_runs(tmp_path)) == sorted(
        f"r{n}" for n in range(2 * RUNS_PER_PAGE, 3 * RUNS_PER_PAGE + 1)
    )


def test_a_catalog_that_is_not_json_or_not_ours_is_rebuilt(tmp_path: Path) -> None:
    for n in range(1, 6):
        record_run(tmp_path, small_record(n), keep_runs=10)
    path = catalog.catalog_path(tmp_path)
    for body in ("{not json", "[]", '{"version": 2, "entries": []}', '{"version": 1}'):
        path.write_text(body)
        found = catalog.refresh(tmp_path)
        assert sorted(r.run_id for r in found.records().values()) == [f"r{n}" for n in range(1, 6)]
        assert len(found.read) == 5  # nothing of it trusted
        assert catalog.refresh(tmp_path).read == ()  # and written anew, whole


def test_a_catalog_entry_that_does_not_parse_is_read_again_not_trusted(tmp_path: Path) -> None:
    for n in range(1, 4):
        record_run(tmp_path, small_record(n), keep_runs=10)
    path = catalog.catalog_path(tmp_path)
    body = json.loads(path.read_text())
    name = next(iter(body["entries"]))
    body["entries"][name]["data"]["status"] = "no such status"  # stat still matches
    other = sorted(body["entries"])[1]
    body["entries"][other]["data"] = ["not", "a", "record"]
    path.write_text(json.dumps(body))
    found = catalog.refresh(tmp_path)
    assert sorted(found.read) == sorted([name, other])
    assert sorted(r.run_id for r in found.records().values()) == ["r1", "r2", "r3"]
    record_run(tmp_path, small_record(4), keep_runs=10)  # no crash on the entry
    assert sorted(listed_runs(tmp_path)) == ["r1", "r2", "r3", "r4"]


def test_a_record_rewritten_at_the_same_size_and_time_is_read_again(tmp_path: Path) -> None:
    record_run(tmp_path, small_record(1), keep_runs=10)
    (path,) = record_files(tmp_path)
    stat = path.stat()
    text = path.read_text()
    assert text.count('"r1"') == 1
    write_atomic(path, text.replace('"r1"', '"r7"'))  # a new file, renamed over the old
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))  # a coarse clock: same tick
    assert path.stat().st_size == stat.st_size
    assert [r.run_id for r in catalog.refresh(tmp_path).records().values()] == ["r7"]


def test_a_record_removed_behind_the_catalog_is_dropped_from_it(tmp_path: Path) -> None:
    for n in range(1, 4):
        record_run(tmp_path, small_record(n), keep_runs=10)
    (tmp_path / "runs" / f"{record_key(small_record(2))}.json").unlink()
    record_run(tmp_path, small_record(4), keep_runs=10)
    assert sorted(listed_runs(tmp_path)) == ["r1", "r3", "r4"]
    assert "r2" not in catalog.catalog_path(tmp_path).read_text()


def test_a_task_that_saves_while_another_renders_is_not_lost_from_the_index(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The other task saves, prunes and renders between this one's listing and its
    writes: this one's pages, written last, must still list what the other saved."""
    for n in range(1, 5):
        record_run(tmp_path, small_record(n), keep_runs=5)
    refresh = catalog.refresh
    interleaved: list[str] = []

    def refresh_then_the_other_task(report_dir: Path, *, write: bool = True) -> catalog.Catalog:
        found = refresh(report_dir, write=write)
        if not interleaved:
            interleaved.append("r6")
            record_run(report_dir, small_record(6), keep_runs=5)
        return found

    monkeypatch.setattr(catalog, "refresh", refresh_then_the_other_task)
    record_run(tmp_path, small_record(5), keep_runs=5)
    assert interleaved == ["r6"]
    assert sorted(listed_runs(tmp_path)) == ["r2", "r3", "r4", "r5", "r6"]
    assert sorted(r.run_id for r in refresh(tmp_path).records().values()) == [
        "r2",
        "r3",
        "r4",
        "r5",
        "r6",
    ]


def _record_many(report_dir: Path, first: int, count: int) -> None:
    for n in range(first, first + count):
        record_run(report_dir, small_record(n), keep_runs=40)


def test_two_processes_recording_at_once_keep_the_catalog_and_index_whole(
    tmp_path: Path,
) -> None:
    for n in range(1, 31):
        save_record(tmp_path, small_record(n))
    context = multiprocessing.get_context("fork")
    workers = [
        context.Process(target=_record_many, args=(tmp_path, first, 25)) for first in (101, 201)
    ]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=120)
        assert worker.exitcode == 0
    on_disk = sorted(r.run_id for r in catalog.refresh(tmp_path).records().values())
    catalog.catalog_path(tmp_path).unlink()
    assert sorted(r.run_id for r in catalog.refresh(tmp_path).records().values()) == on_disk
    assert {"r125", "r225"} <= set(on_disk)  # each process's last run kept
    assert 40 <= len(on_disk) <= 42  # at most one race apart from the bound
    assert sorted(listed_runs(tmp_path)) == on_disk  # the index lists exactly those
    assert not [p for p in tmp_path.rglob("*.tmp")]


def test_retention_removes_the_rings_only_removed_records_named(tmp_path: Path) -> None:
    first, second, third = (
        sample_generation(T0 + timedelta(hours=h), seed=h, vnodes=2) for h in (1, 2, 3)
    )
    record_run(tmp_path, first, keep_runs=2)
    record_run(tmp_path, dataclasses.replace(first, run_id="again"), keep_runs=2)  # same ring
    rings = tmp_path / "runs" / "rings"
    (first_ring,) = rings.iterdir()
    old = time.time() - site.REMOVAL_GRACE.total_seconds() - 60
    os.utime(first_ring, (old, old))
    record_run(tmp_path, second, keep_runs=2)  # removes one record of the first: ring named
    assert first_ring.exists()
    record_run(tmp_path, third, keep_runs=2)  # removes the other: the ring is no one's
    assert not first_ring.exists()
    assert len(list(rings.iterdir())) == 2
    assert not (tmp_path / GENERATIONS_DIR / generation_page_name(first)).exists()
    for kept in (second, third):
        assert (
            "<h2>Ring</h2>" in (tmp_path / GENERATIONS_DIR / generation_page_name(kept)).read_text()
        )


def test_a_ring_touched_lately_is_kept_for_the_task_saving_a_record_of_it(tmp_path: Path) -> None:
    first, second = (sample_generation(T0 + timedelta(hours=h), seed=h, vnodes=2) for h in (1, 2))
    record_run(tmp_path, first, keep_runs=1)
    record_run(tmp_path, second, keep_runs=1)  # the first's ring is no one's, but fresh
    assert len(list((tmp_path / "runs" / "rings").iterdir())) == 2


def test_retention_removes_nothing_its_records_do_not_own(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    (runs / "rings").mkdir(parents=True)  # so that runs/rings/../../ leads somewhere
    victim = tmp_path / "victim.json"
    victim.write_text("{}")
    hostile = GenerationReport(
        "gen-x", T0 - timedelta(days=9), RunStatus.SUCCESS, created_at=T0 - timedelta(days=9)
    )
    path = save_record(tmp_path, hostile)
    data = json.loads(path.read_text())
    data["ring_file"] = "../../victim"  # ring_path() of it is the victim
    path.write_text(json.dumps(data))
    (runs / "summary.json").write_text('{"not": "a record"}')  # another tool's JSON
    (runs / "broken.json").write_text('{"kind": "generation"}')  # unreadable: a problem
    docs = tmp_path / "gen-x-docs"
    docs.mkdir()
    (docs / "index.html").write_text("docs")
    old = time.time() - 10 * 86400
    for p in (victim, path, runs / "summary.json", runs / "broken.json"):
        os.utime(p, (old, old))
    for n in range(1, 4):
        record_run(tmp_path, small_record(n), keep_runs=2)
    assert not path.exists()  # the oldest record went
    assert victim.read_text() == "{}"
    assert (runs / "summary.json").exists() and (runs / "broken.json").exists()
    assert (docs / "index.html").exists()
    assert sorted(r.name for r in record_files(tmp_path)) == sorted(
        ["summary.json", "broken.json", *(f"{record_key(small_record(n))}.json" for n in (2, 3))]
    )


@pytest.mark.parametrize("value", ["0", "-1", "abc", "1.5", "1e3"])
def test_a_bad_keep_runs_setting_is_refused_by_name(value: str) -> None:
    with pytest.raises(ConfigError, match="CDCGEN_REPORT_KEEP_RUNS"):
        PipelineConfig.from_env({"CDCGEN_REPORT_KEEP_RUNS": value})


def test_the_keep_runs_setting_and_its_default() -> None:
    assert PipelineConfig.from_env({}).report_keep_runs == DEFAULT_REPORT_KEEP_RUNS
    assert PipelineConfig.from_env({"CDCGEN_REPORT_KEEP_RUNS": "25"}).report_keep_runs == 25


def test_recording_with_nothing_to_keep_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="keep_runs"):
        record_run(tmp_path, small_record(1), keep_runs=0)
    assert not tmp_path.joinpath("runs").exists()  # refused before anything was written


def test_a_sink_keeps_its_newest_replication_records_and_no_other_sinks_are_touched(
    tmp_path: Path,
) -> None:
    orders = ("replica.orders", "shop.orders")
    customers = ("replica.customers", "shop.customers")
    record_replication(tmp_path, replication_record(*customers, T0, T0), keep_runs=2)
    for minutes in range(5):
        at = T0 + timedelta(minutes=minutes)
        saved = record_replication(tmp_path, replication_record(*orders, at, at), keep_runs=2)
        if minutes == 0:
            (folder,) = (tmp_path / "replication").glob("replica.orders-*")
            (folder / "notes.txt").write_text("kept")
    kept = sorted(p.name for p in folder.glob("*.json"))
    assert [name[:17] for name in kept] == ["2026-11-01T120300", "2026-11-01T120400"]
    assert saved.name == "replication.html"
    assert (folder / "notes.txt").read_text() == "kept"
    (other,) = (tmp_path / "replication").glob("replica.customers-*")
    assert len(list(other.glob("*.json"))) == 1
    with pytest.raises(ValueError, match="keep_runs"):
        record_replication(tmp_path, replication_record(*orders, T0, T0), keep_runs=0)


def test_a_ring_removed_while_a_record_of_it_is_saved_is_written_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = sample_generation(T0, vnodes=2)
    record_run(tmp_path, first, keep_runs=5)
    (ring,) = (tmp_path / "runs" / "rings").iterdir()
    write = record_store._write_record

    def another_task_prunes_meanwhile(report_dir: Path, record: RunRecord, data: Any) -> Path:
        ring.unlink()  # after this save touched the ring, before its record is written
        return write(report_dir, record, data)

    monkeypatch.setattr(record_store, "_write_record", another_task_prunes_meanwhile)
    same_objects = dataclasses.replace(first, run_id="again")
    equal_ring = dataclasses.replace(first, run_id="third", ring=tuple(list(first.ring)))
    for record in (same_objects, equal_ring):
        save_record(tmp_path, record)
        assert ring.is_file()
        loaded = record_store.load_record(tmp_path, record_key(record))
        assert isinstance(loaded, GenerationReport) and loaded.ring == first.ring


def _docs_folder(folder: Path, *, marker: bool = True, jobs: int = 0) -> Path:
    """A folder as a validation leaves it (the marker, a page), written long ago."""
    for sub in [folder / f"job-{n}" for n in range(1, jobs + 1)] or [folder]:
        sub.mkdir(parents=True)
        (sub / "index.html").write_text("docs")
        if marker:
            (sub / ".cdcgen-data-docs").write_text("marker")
    (folder / "checks.html").write_text("checks")
    old = time.time() - site.REMOVAL_GRACE.total_seconds() - 60
    os.utime(folder, (old, old))
    return folder


def test_retention_removes_the_folders_only_removed_runs_linked(tmp_path: Path) -> None:
    checks = tmp_path / "changes" / "ks.t"
    outside = _docs_folder(tmp_path.parent / f"{tmp_path.name}-outside")
    checks.mkdir(parents=True)
    (checks / "r5").symlink_to(outside)
    folders = {
        "r1": _docs_folder(checks / "r1"),  # the run's Data Docs: removed
        "r2": _docs_folder(checks / "r2", jobs=2),  # a run of two jobs: removed
        "r3": _docs_folder(checks / "r3", marker=False),  # no validation's: kept
        "r4": _docs_folder(checks / "r4"),  # written to lately: kept
        "r7": _docs_folder(checks / "r7"),  # linked by a kept record too: kept
        "gen": _docs_folder(tmp_path / "generation_ts=1"),  # a generation's Data Docs
        "tablets": _docs_folder(tmp_path / "table=shop.orders" / "generation_ts=1"),
    }
    os.utime(folders["r4"])
    links = {
        "r1": "changes/ks.t/r1/checks.html",
        "r2": "changes/ks.t/r2/checks.html",
        "r3": "changes/ks.t/r3/checks.html",
        "r4": "changes/ks.t/r4/index.html",
        "r5": "changes/ks.t/r5/checks.html",  # a link out of the folder: kept
        "r6": "changes/ks.t/../../../victim/index.html",
        "r7": str(folders["r7"] / "checks.html"),  # absolute, inside the report dir
    }
    for n, (run, link) in enumerate(links.items(), start=1):
        at = T0 + timedelta(minutes=n)
        save_record(
            tmp_path,
            ChangesReport(RunStatus.SUCCESS, created_at=at, run_id=run, data_docs_path=link),
        )
    generation = GenerationReport(
        "gen-1",
        T0,
        RunStatus.SUCCESS,
        created_at=T0 + timedelta(minutes=8),
        run_id="g1",
        data_docs_path="generation_ts=1/index.html",
    )
    record_run(tmp_path, generation, keep_runs=10)
    tablets = dataclasses.replace(
        generation,
        generation_id="gen-2",
        created_at=T0 + timedelta(minutes=8, seconds=1),
        data_docs_path="table=shop.orders/generation_ts=1/index.html",
    )
    record_run(tmp_path, tablets, keep_runs=10)
    os.utime(folders["gen"], (0, 0))
    os.utime(folders["tablets"], (0, 0))
    retried = ChangesReport(
        RunStatus.SUCCESS,
        created_at=T0 + timedelta(minutes=9),
        run_id="r7",
        data_docs_path="changes/ks.t/r7/checks.html",
    )
    record_run(tmp_path, retried, keep_runs=3)  # removes the seven changes runs
    assert [p.name for p in folders.values() if p.exists()] == [
        "r3",
        "r4",
        "r7",
        "generation_ts=1",
        "generation_ts=1",
    ]
    assert (outside / "index.html").exists() and (checks / "r5").is_symlink()
    record_run(tmp_path, small_record(10_001), keep_runs=2)  # removes the generations
    assert not folders["gen"].exists() and not folders["tablets"].exists()
    assert folders["r7"].exists()
