"""Run records on disk: rings kept once beside them, pages rendered only where a record
changed, and records written before rings moved out still read."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

from cdcgen.reports.record_json import dumps
from cdcgen.reports.record_store import (
    RING_FILE,
    load_record,
    load_records,
    read_record,
    record_path,
    save_record,
)
from cdcgen.reports.records import GenerationReport, generation_page_name, record_key
from cdcgen.reports.sample import sample_generation
from cdcgen.reports.site import GENERATIONS_DIR, build_site, record_run

T0 = datetime(2026, 11, 1, 12, 0, tzinfo=UTC)


def _rings(report_dir: Path) -> list[Path]:
    return sorted((report_dir / "runs" / "rings").glob("*.json"))


def test_a_ring_is_kept_once_and_read_back_whole(tmp_path: Path) -> None:
    validated = replace(sample_generation(T0, vnodes=4), run_id="r1")
    published = replace(validated, published=True)
    other_run = replace(validated, run_id="r2")
    for record in (validated, published, other_run):
        save_record(tmp_path, record)
    (ring_file,) = _rings(tmp_path)
    assert RING_FILE in record_path(tmp_path, record_key(other_run)).read_text()
    assert '"ring"' not in record_path(tmp_path, record_key(other_run)).read_text()
    loaded = load_record(tmp_path, record_key(published))
    assert isinstance(loaded, GenerationReport)
    assert loaded.ring == validated.ring and loaded.published
    listed, problems = load_records(tmp_path, rings=False)
    assert problems == [] and len(listed) == 2
    assert all(isinstance(r, GenerationReport) and r.ring == () for r in listed)
    assert ring_file.stat().st_size > 0


def test_an_altered_or_missing_ring_is_a_problem_not_a_wrong_picture(tmp_path: Path) -> None:
    record = replace(sample_generation(T0, vnodes=4), run_id="r1")
    path = save_record(tmp_path, record)
    (ring_file,) = _rings(tmp_path)
    ring_file.write_text(ring_file.read_text() + " ")  # still JSON, no longer what was kept
    assert load_record(tmp_path, record_key(record)) is None
    _, problems = load_records(tmp_path)
    assert len(problems) == 1 and "changed since it was recorded" in problems[0]
    ring_file.unlink()
    _, problems = load_records(tmp_path)
    assert len(problems) == 1 and path.name in problems[0]
    listed, problems = load_records(tmp_path, rings=False)  # listing never opens it
    assert problems == [] and len(listed) == 1


def test_a_record_with_its_ring_inline_still_reads(tmp_path: Path) -> None:
    record = replace(sample_generation(T0, vnodes=4), run_id="r1")
    path = record_path(tmp_path, record_key(record))
    path.parent.mkdir(parents=True)
    path.write_text(dumps(record))  # how records were written before rings moved out
    loaded = read_record(tmp_path, path)
    assert isinstance(loaded, GenerationReport) and loaded.ring == record.ring
    page = build_site(tmp_path).generation_pages[0].read_text()
    assert 'class="range"' in page


def test_recording_a_run_renders_its_page_and_the_index_not_the_others(tmp_path: Path) -> None:
    first = replace(sample_generation(T0, vnodes=4), run_id="r1")
    second = replace(sample_generation(T0 + timedelta(hours=1), seed=8, vnodes=4), run_id="r2")
    first_page = record_run(tmp_path, first)
    drawn = first_page.stat()
    second_page = record_run(tmp_path, second)
    assert second_page.name == generation_page_name(second)
    assert 'class="range"' in second_page.read_text()  # its ring, read back from its file
    assert first_page.stat().st_ino == drawn.st_ino  # untouched: its records did not change
    index = (tmp_path / "index.html").read_text()
    assert generation_page_name(first) in index and generation_page_name(second) in index
    pages = build_site(tmp_path).generation_pages
    assert {p.name for p in pages} == {first_page.name, second_page.name}
    assert (tmp_path / GENERATIONS_DIR / first_page.name).is_file()


def test_a_page_missing_is_drawn_again_by_the_next_recording(tmp_path: Path) -> None:
    """A task that died between saving its record and drawing its page leaves a link
    to nothing; the next task to record a run draws it (the report view never writes)."""
    first = replace(sample_generation(T0, vnodes=4), run_id="r1")
    save_record(tmp_path, first)
    record_run(tmp_path, replace(sample_generation(T0 + timedelta(hours=1), seed=8), run_id="r2"))
    assert 'class="range"' in (tmp_path / GENERATIONS_DIR / generation_page_name(first)).read_text()


def test_a_ring_read_back_is_saved_again_under_its_file_without_being_encoded(
    tmp_path: Path,
) -> None:
    """Publish records again the ring validate's record gave it: the file it came from is
    named as it is; a ring that is not that object, or a file gone since, is written."""
    validated = replace(sample_generation(T0, vnodes=4), run_id="r1")
    save_record(tmp_path, validated)
    (ring_file,) = _rings(tmp_path)
    loaded = load_record(tmp_path, record_key(validated))
    assert isinstance(loaded, GenerationReport)
    published = replace(loaded, published=True)
    save_record(tmp_path, published)
    again = load_record(tmp_path, record_key(published))
    assert isinstance(again, GenerationReport) and again.published
    assert again.ring == validated.ring and _rings(tmp_path) == [ring_file]

    changed = replace(published, ring=published.ring[:-1])  # another ring: its own file
    save_record(tmp_path, replace(changed, run_id="r2"))
    assert len(_rings(tmp_path)) == 2
    assert load_record(tmp_path, record_key(replace(changed, run_id="r2"))) is not None

    reread = load_record(tmp_path, record_key(published))
    assert isinstance(reread, GenerationReport)
    ring_file.unlink()  # gone since it was read: written again, not named blindly
    save_record(tmp_path, replace(reread, run_id="r3"))
    assert ring_file.is_file()
    assert load_record(tmp_path, record_key(replace(reread, run_id="r3"))) is not None
