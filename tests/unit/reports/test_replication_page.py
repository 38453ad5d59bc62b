"""The replication page, as a person reads it: where each sink stands, what was not applied."""

from __future__ import annotations

import json
import os
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from cdcgen.core.replication_record import ReplicationRecord
from cdcgen.reports.replication_page import anchor
from cdcgen.reports.replication_records import RECORDS_DIR, read_runs, save_record
from cdcgen.reports.sample import write_sample_site
from cdcgen.reports.site import RUNS_DIR, build_site, record_replication
from cdcgen.reports.web import index_is_stale
from unit.reports.test_renderers import SVG_NS, parse, svgs

T0 = datetime(2026, 11, 1, 9, 0, tzinfo=UTC)
HOSTILE = '<script>alert("x")</script>&'
CDC_TIME = "6f1c2e40-b7c5-11f0-8de9-0242ac120002"
STREAM = "7ff9a3c2000000005e1b0a7d00000042"
REASON = "replica.orders.items: removed list elements are logged by cell key"


def record(
    sink: str,
    source: str,
    ended: datetime,
    until: datetime,
    *,
    kind: str = "apply",
    log_rows: int = 0,
    rejected: list[dict[str, Any]] | None = None,
    bootstrapped_at: datetime = T0,
    copied_rows: int | None = None,
) -> ReplicationRecord:
    """A record as ``cdcgen.replication.replication_run`` writes it (``_record``, then
    ``_finish``)."""
    result: dict[str, Any] = {
        "kind": kind,
        "source_table": source,
        "sink_table": sink,
        "run_id": f"{kind}__{ended.isoformat()}",
        "started_at": (ended - timedelta(seconds=20)).isoformat(),
        "consistent_from": bootstrapped_at.isoformat(),
        "ended_at": ended.isoformat(),
        "consistent_until": until.isoformat(),
        "bootstrapped_at": bootstrapped_at.isoformat(),
        "lag_seconds": round((ended - until).total_seconds(), 3),
        "applied_log_rows": log_rows,
        "applied_batches": log_rows // 2,
        "rejected": rejected or [],
        "status": "rejected" if rejected else "ok",
    }
    if kind == "bootstrap":
        result.update(copied_rows=copied_rows, truncated=False)
    else:
        result.update(applied_from=bootstrapped_at.isoformat(), lake_version=4)
    return ReplicationRecord.from_json(result)


def two_sinks() -> list[ReplicationRecord]:
    """orders: bootstrap, apply, an apply with a refused change; customers: bootstrap, apply."""
    refused = {
        "write_time": (T0 + timedelta(minutes=40)).isoformat(),
        "cdc_time": CDC_TIME,
        "stream_id": STREAM,
        "reason": REASON,
    }
    orders, customers = ("replica.orders", "shop.orders"), ("replica.customers", "shop.customers")
    return [
        record(*orders, T0 + timedelta(minutes=2), T0, kind="bootstrap", copied_rows=85_211),
        record(*orders, T0 + timedelta(minutes=30), T0 + timedelta(minutes=29), log_rows=1200),
        record(
            *orders,
            T0 + timedelta(minutes=60),
            T0 + timedelta(minutes=57),
            log_rows=640,
            rejected=[refused],
        ),
        record(*customers, T0 + timedelta(minutes=5), T0, kind="bootstrap", copied_rows=4_096),
        record(*customers, T0 + timedelta(minutes=65), T0 + timedelta(minutes=64), log_rows=90),
    ]


def build(report_dir: Path, records: list[ReplicationRecord]) -> tuple[str, str]:
    """Records saved as the replication run saves them, the last one rebuilding the site;
    the replication page's and the index's HTML."""
    for item in records[:-1]:
        save_record(report_dir, item)
    page = record_replication(report_dir, records[-1])
    return page.read_text(), (report_dir / "index.html").read_text()


def section(html: str, sink: str) -> str:
    """The part of the page about one sink table (from its heading to the next)."""
    start = html.index(f'<h2 id="{anchor(sink)}">')
    end = html.find("<h2", start + 1)
    return html[start : end if end > 0 else len(html)]


def test_each_sink_shows_its_consistency_point_lag_and_last_bootstrap(tmp_path: Path) -> None:
    html, _ = build(tmp_path, two_sinks())
    page = parse(html)
    assert page.headings == [
        "Replication",
        "Sink tables",
        "replica.customers ← shop.customers",
        "replica.orders ← shop.orders",
    ]
    orders = "".join(parse(section(html, "replica.orders")).text)
    assert "Every stream of shop.orders is applied to replica.orders up to" in orders
    assert "2026-11-01 09:57:00.000Z" in orders  # the latest run's consistency point
    assert "3.0 min (as of 2026-11-01 10:00:00.000Z)" in orders
    assert "2026-11-01 09:00:00.000Z (85,211 rows copied" in orders
    customers = "".join(parse(section(html, "replica.customers")).text)
    assert "2026-11-01 10:04:00.000Z" in customers and "60.0 s (as of" in customers
    assert "4,096 rows copied" in customers
    assert "every change read from the lake was applied" in customers
    # One lag chart and one applied-changes chart per sink; a dot per run.
    lag_orders = svgs(section(html, "replica.orders"))[0]
    assert len(lag_orders.findall(f".//{SVG_NS}circle")) == 3
    # Runs per sink, newest first, with their log rows and batches.
    runs = section(html, "replica.orders").split("<h3>Runs</h3>")[1]
    assert runs.index("1,200") > runs.index(">640<")
    assert ">600<" in runs  # the batches of the run that applied 1,200 log rows


def test_a_change_not_applied_is_named_with_its_run(tmp_path: Path) -> None:
    html, _ = build(tmp_path, two_sinks())
    assert "except the changes not applied" in section(html, "replica.orders")
    orders = section(html, "replica.orders").split("<h3>Changes not applied</h3>")[1]
    for shown in (REASON, CDC_TIME, STREAM, "2026-11-01 09:40:00.000Z", "apply__2026-11-01T10"):
        assert shown in orders, shown
    assert REASON not in section(html, "replica.customers")
    assert '<span class="badge rejected">rejected</span>' in html
    card = '<div class="value">1</div><div class="label">changes not applied</div>'
    assert card in html


def test_the_index_links_to_the_page_and_to_each_sink(tmp_path: Path) -> None:
    html, index = build(tmp_path, two_sinks())
    assert 'href="replication.html"' in index
    assert "Replication" in parse(index).headings
    link = f'href="replication.html#{anchor("replica.orders")}"'
    assert link in index and f'id="{anchor("replica.orders")}"' in html
    for href in re.findall(r'href="([^"#:]+)', index):
        assert (tmp_path / href).exists(), href
    # Replication records keep to their own folder; runs/ stays the other runs'.
    assert not (tmp_path / RUNS_DIR).exists()
    assert len(list((tmp_path / RECORDS_DIR).glob("*/*.json"))) == 5


def test_names_and_reasons_from_records_are_escaped(tmp_path: Path) -> None:
    hostile = record(
        f"ks.{HOSTILE}",
        f"src.{HOSTILE}",
        T0 + timedelta(minutes=5),
        T0,
        rejected=[dict.fromkeys(("write_time", "cdc_time", "stream_id", "reason"), HOSTILE)],
    ).updated(run_id=HOSTILE)
    html, index = build(tmp_path, [hostile])
    escaped = "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;&amp;"
    for text in (html, index):
        assert "<script>" not in text
        assert escaped in text
    assert html.count(escaped) >= 8  # sink, source, run, write time, cdc$time, stream, reason
    for svg in svgs(html):  # the charts' labels too: each must still be well-formed XML
        assert svg.tag == f"{SVG_NS}svg"


def test_without_replication_runs_the_page_says_so(tmp_path: Path) -> None:
    paths = build_site(tmp_path)
    html = paths.replication.read_text()
    assert "No replication has run yet" in html
    assert parse(html).headings == ["Replication"]
    index = paths.index.read_text()
    assert 'href="replication.html"' in index  # the navigation, on every page
    assert "Replication" not in parse(index).headings


def test_an_unreadable_record_is_named_and_the_others_still_shown(tmp_path: Path) -> None:
    broken = record("replica.orders", "shop.orders", T0 + timedelta(hours=2), T0)
    broken = broken.updated(ended_at="not a time")
    folder = tmp_path / RECORDS_DIR / "broken"
    folder.mkdir(parents=True)
    (folder / "x.json").write_text(json.dumps(broken.to_json()))
    (folder / "y.json").write_text("[1, 2]")
    html, _ = build(tmp_path, two_sinks())
    problems = parse(html).text
    assert "Unreadable records" in parse(html).headings
    assert any("replica.orders" in p and "not a time" in p for p in problems)
    assert any("not an object" in p for p in problems)
    assert "replica.customers ← shop.customers" in parse(html).headings
    runs, unread = read_runs([broken, *two_sinks()])
    assert len(runs) == 5 and len(unread) == 1


def test_a_new_replication_record_makes_the_served_index_stale(tmp_path: Path) -> None:
    build_site(tmp_path)
    assert not index_is_stale(tmp_path)
    path = save_record(tmp_path, two_sinks()[0])
    later = (tmp_path / "index.html").stat().st_mtime + 5
    os.utime(path, (later, later))
    assert index_is_stale(tmp_path)


def test_the_sample_site_has_two_replicated_tables(tmp_path: Path) -> None:
    write_sample_site(tmp_path)
    html = (tmp_path / "replication.html").read_text()
    headings = parse(html).headings
    assert "replica.orders ← shop.orders" in headings
    assert "replica.customers ← shop.customers" in headings
    assert html.count('<span class="badge rejected">') == 2
