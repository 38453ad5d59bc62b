"""The full-stack test's browser, for real: Debian's Chromium driven by Selenium.

A local HTTP server serves the report site (the sample records, no cluster needed) and
a blank page; the browser must wait for a page's text, count its elements, take
screenshots whose pixels show what was drawn, and leave no process behind. Needs
Debian's ``chromium`` and ``chromium-driver`` (installed on first use, as root).
"""

from __future__ import annotations

import functools
import http.server
import threading
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from cdcgen_dev.devstack.browser import Browser
from cdcgen_dev.devstack.png import pixel_stats
from cdcgen_dev.devstack.processes import StackError

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    """``(base URL, root)`` of the sample report site plus ``blank.html``."""
    from cdcgen.reports.sample import write_sample_site

    root = tmp_path_factory.mktemp("site")
    write_sample_site(root)
    (root / "blank.html").write_text("<!doctype html><html><body></body></html>")
    handler = functools.partial(_QuietHandler, directory=str(root))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", root
    finally:
        server.shutdown()
        thread.join(timeout=10)


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        pass


def _browser_processes() -> list[psutil.Process]:
    """Chromium's processes among ours; one that exits while they are listed is not."""
    found = []
    for process in psutil.Process().children(recursive=True):
        try:
            if "chrom" in process.name().lower():
                found.append(process)
        except psutil.NoSuchProcess:
            continue
    return found


def _still_running(processes: list[psutil.Process], timeout: float = 15.0) -> list[psutil.Process]:
    """Those of ``processes`` still alive after ``timeout`` (Chromium's helpers, once
    ChromeDriver is gone, are no longer our children: they are followed by pid)."""
    _, alive = psutil.wait_procs(processes, timeout=timeout)
    return alive


def test_pages_render_and_screenshots_show_them(site: tuple[str, Path], tmp_path: Path) -> None:
    base, root = site
    generation_page = sorted((root / "generations").glob("*.html"))[0].name
    with Browser(tmp_path / "browser", width=1200, height=900) as browser:
        started = _browser_processes()
        assert started, "no chromedriver/chromium child while a session is open"
        browser.open(f"{base}/index.html")
        text = browser.wait_for_text(["cdcgen runs", "Every run"], timeout=60)
        assert "GENERATIONS" in text.upper()
        index = pixel_stats(browser.screenshot(tmp_path / "index.png"))
        assert index.width == 1200
        assert index.looks_rendered(), index

        browser.open(f"{base}/generations/{generation_page}")
        browser.wait_for_text(["Counts", "Ring", "Distributions"], timeout=60)
        assert browser.count("svg.ring path.range") > 0
        assert browser.count("no-such-element") == 0
        page = pixel_stats(browser.full_page_screenshot(tmp_path / "generation.png"))
        assert page.height > 900, "the full-page screenshot is only the window"
        assert page.looks_rendered(min_colours=20), page

        browser.open(f"{base}/replication.html")
        browser.wait_for_text(["replica.orders", "Changes not applied"], timeout=60)
        assert browser.count("svg.chart.lines") == 4  # lag and changes applied, per sink

        browser.open(f"{base}/blank.html")
        blank = pixel_stats(browser.screenshot(tmp_path / "blank.png"))
        assert not blank.looks_rendered(), blank
        with pytest.raises(StackError, match="never showed"):
            browser.wait_for_text(["cdcgen runs"], timeout=2)
        started = _browser_processes()  # every renderer the pages needed
    assert _still_running(started) == []


def test_using_a_browser_that_is_not_started_fails_clearly(tmp_path: Path) -> None:
    with pytest.raises(StackError, match="not started"):
        Browser(tmp_path).open("about:blank")


def test_data_docs_load_nothing_from_outside(tmp_path: Path) -> None:
    """GX's pages, vendored (cdcgen.validation.docs_assets): every script and style comes
    from the site itself, and they run (jQuery, bootstrap-table)."""
    import json
    import random

    from cdcgen.cli import main
    from cdcgen.core.generation_arrays import build_generation_arrays
    from cdcgen.core.topology import Node

    nodes = (Node("a", 2, 12, (-100, 5 * 10**18)),)
    description = tmp_path / "description.json"
    arrays = build_generation_arrays(nodes, random.Random(1))
    description.write_text(json.dumps(arrays.description_json()))
    assert (
        main(["generation", "validate", str(description), "--report", str(tmp_path / "docs")]) == 0
    )
    pages = list((tmp_path / "docs").rglob("*.html"))
    assert pages and not [p for p in pages if 'src="http' in p.read_text()]
    handler = functools.partial(_QuietHandler, directory=str(tmp_path))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        with Browser(tmp_path / "browser", width=1200, height=900) as browser:
            for page in ("index.html", *(str(p.relative_to(tmp_path / "docs")) for p in pages)):
                browser.open(f"{base}/docs/{page}")
                browser.wait_for_text(["Expectation"], timeout=60)
                assert browser.script("return typeof window.jQuery") == "function", page
                loaded = browser.script(
                    "return performance.getEntriesByType('resource').map(e => e.name)"
                )
                assert loaded and all(url.startswith(base) for url in loaded), loaded
            assert browser.script("return typeof $.fn.bootstrapTable") == "function"
    finally:
        server.shutdown()
