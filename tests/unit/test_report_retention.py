"""Retention and paging: a task's work on the report site does not grow with history."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from cdcgen.reports import catalog, site
from cdcgen.reports.index_page import RUNS_PER_PAGE, render_index_pages
from cdcgen.reports.records import (
    ChangesReport,
    GenerationReport,
    RunRecord,
    RunStatus,
    generation_page_name,
)
from cdcgen.reports.site import GENERATIONS_DIR, build_site, record_run, save_record, update_site

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
