"""Data Docs pages rewritten to load only their own files (cdcgen.validation.docs_assets)."""

from __future__ import annotations

from pathlib import Path

from cdcgen.validation.docs_assets import PACKAGES, URLS, VENDOR, vendor_data_docs

GX_ASSETS = "https://great-expectations-web-assets.s3.us-east-2.amazonaws.com"
PAGE = f"""<html><head>
<link rel="stylesheet" href="https://maxcdn.bootstrapcdn.com/bootstrap/4.3.1/css/bootstrap.min.css">
<script src="https://cdn.jsdelivr.net/npm/vega@5"></script>
<script src="https://evil.example/new-cdn.js"></script>
<style>.brand {{ background: url('{GX_ASSETS}/full_logo_dark.png') }}</style>
</head><body><img src="{GX_ASSETS}/logo-long.png?d=1">
<a href="https://greatexpectations.io">a link is not a load</a></body></html>
"""


def fake_assets(root: Path) -> Path:
    """An installed-assets folder holding every pinned file (contents do not matter)."""
    for package in PACKAGES.values():
        for file in package.files:
            path = root / package.folder / (file + "x.woff2" if file.endswith("/") else file)
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(file)
        (root / package.folder / ".complete").write_text("")
    return root


def test_known_loads_are_vendored_and_unknown_ones_removed(tmp_path: Path) -> None:
    site = tmp_path / "docs"
    page = site / "validations" / "suite" / "run.html"
    page.parent.mkdir(parents=True)
    page.write_text(PAGE)
    assert vendor_data_docs(site, fake_assets(tmp_path / "assets")) == 1  # evil.example
    text = page.read_text()
    assert f'href="../../{VENDOR}/bootstrap-4.3.1/dist/css/bootstrap.min.css"' in text
    assert f'src="../../{VENDOR}/vega-5.33.1/build/vega.min.js"' in text
    assert "evil.example" not in text and "amazonaws" not in text
    assert text.count("../../static/images/logo-long.png") == 2
    assert 'href="https://greatexpectations.io"' in text
    for file in URLS.values():
        assert (site / VENDOR / file).is_file(), file


def test_without_installed_assets_nothing_external_is_loaded(tmp_path: Path) -> None:
    site = tmp_path / "docs"
    site.mkdir()
    (site / "index.html").write_text(PAGE)
    assert vendor_data_docs(site, tmp_path / "none") == 3
    text = (site / "index.html").read_text()
    assert 'src="http' not in text and 'stylesheet" href="http' not in text
    assert "url('http" not in text
