"""Data Docs that load nothing from outside: GX's scripts and styles, vendored.

GX's Data Docs pages load jQuery, Bootstrap, bootstrap-table, Vega and Font Awesome from
five CDNs and its logo from S3. A report served inside Airflow must not make the reader's
browser fetch code from third parties (nor break where there is no internet), so the
installer (``python -m cdcgen.validation.docs_assets``, run by ``make setup`` and the
image) fetches exactly those files once, from the npm registry, each package's tarball
checked against a pinned SHA-256; every Data Docs folder then gets them under
``static/vendor/`` (hard links where the file system allows) and its pages are rewritten
to load them from there. GX's logo is its own ``static/images/logo-long.png``. Whatever
external load is left (a newer GX adding a CDN) is removed from the page and logged,
never loaded; without installed assets every external load is removed the same way.

Why not a Python package: no maintained distribution on PyPI ships these exact files.
"""

from __future__ import annotations

import hashlib
import io
import logging
import os
import re
import shutil
import sys
import tarfile
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from cdcgen.validation.errors import AssetError

log = logging.getLogger(__name__)

REGISTRY = "https://registry.npmjs.org"
#: Installed assets: one folder per package (``<name>-<version>``) in the environment.
ASSETS_DIR = Path(sys.prefix) / "share" / "cdcgen" / "data-docs-assets"
VENDOR = "static/vendor"
GX_LOGO = "static/images/logo-long.png"  # GX copies it into every site


@dataclass(frozen=True)
class Package:
    name: str  # npm name, scoped or not
    version: str
    sha256: str  # of the registry's tarball
    files: tuple[str, ...]  # inside the package; a trailing "/" takes a folder

    @property
    def folder(self) -> str:
        return f"{self.name.rsplit('/', 1)[-1]}-{self.version}"

    @property
    def tarball(self) -> str:
        return f"{REGISTRY}/{self.name}/-/{self.folder}.tgz"


PACKAGES = {
    p.folder: p
    for p in (
        Package("jquery", "3.7.1",
                "68a9f787516da47c680e09c187bcbac4536b6f85d90eb882844e12919e583f53",
                ("dist/jquery.min.js",)),
        Package("popper.js", "1.12.9",
                "4233fad2da34a2a6bc982e7e02c85c14180af075853d97d7e3bfa7124c853cbf",
                ("dist/umd/popper.min.js",)),
        Package("bootstrap", "4.3.1",
                "b109c069bbb7cee57c3ddffb65d8481db5fe7e428b6d9b1ca502119a0429bd16",
                ("dist/js/bootstrap.min.js", "dist/css/bootstrap.min.css")),
        Package("bootstrap-table", "1.19.1",
                "80f84cbf2f8f92e0d5444a82fb99495ab8a286b5cdb0594102e568eb9d9fa69a",
                ("dist/bootstrap-table.min.js", "dist/bootstrap-table.min.css",
                 "dist/extensions/filter-control/bootstrap-table-filter-control.min.js",
                 "dist/extensions/filter-control/bootstrap-table-filter-control.min.css")),
        Package("bootstrap-datepicker", "1.9.0",
                "342bd95b65db796e0ac35ad9296edbe6733daefc9869b2e5b27286d423e38146",
                ("dist/js/bootstrap-datepicker.min.js", "dist/css/bootstrap-datepicker.min.css")),
        Package("@fortawesome/fontawesome-free", "6.6.0",
                "cf0b890ab2b68d3c4ea0f93ceb81cc24b956cccf9db36c63be044a672bd3b4dd",
                ("css/all.min.css", "webfonts/")),
        Package("@forevolve/bootstrap-dark", "1.1.0",
                "20b089d52bc2ae80424fc43e5263023e96bd8479e7c5d346b8766c1b792a1cfd",
                ("dist/css/bootstrap-prefers-dark.css",)),
        Package("vega", "5.33.1",
                "1b8504b6731c5311be3269c4d84ca996a5cc293bc772283293ede20c490e16c3",
                ("build/vega.min.js",)),
        Package("vega-lite", "5.23.0",
                "e4cbfdd8f6f1abe381c59cd558fd6a559c12b1496bfdf2e0c3295263a40fe4da",
                ("build/vega-lite.min.js",)),
        Package("vega-embed", "6.29.0",
                "ecf1ee709c2bac9e0a4ead6908114b05b62c71493e10a8a4308109bb070f8eb1",
                ("build/vega-embed.min.js",)),
    )
}  # fmt: skip

_UNPKG_TABLE = "https://unpkg.com/bootstrap-table@"
_CDNJS = "https://cdnjs.cloudflare.com/ajax/libs/"
_TABLE = "bootstrap-table-1.19.1/dist/"
_FILTER = "extensions/filter-control/bootstrap-table-filter-control"
_DATEPICKER = "bootstrap-datepicker-1.9.0/dist/"
#: What GX's pages load -> the vendored file (``<package folder>/<file>``). The "@5"
#: style URLs are what the CDN serves for them: the package's jsdelivr file, pinned here.
#: GX asks for filter-control's stylesheet at 1.19.0 beside 1.19.1's script; both 1.19.1.
URLS = {
    "https://code.jquery.com/jquery-3.7.1.min.js": "jquery-3.7.1/dist/jquery.min.js",
    f"{_CDNJS}popper.js/1.12.9/umd/popper.min.js": "popper.js-1.12.9/dist/umd/popper.min.js",
    "https://stackpath.bootstrapcdn.com/bootstrap/4.3.1/js/bootstrap.min.js":
        "bootstrap-4.3.1/dist/js/bootstrap.min.js",
    "https://maxcdn.bootstrapcdn.com/bootstrap/4.3.1/css/bootstrap.min.css":
        "bootstrap-4.3.1/dist/css/bootstrap.min.css",
    f"{_UNPKG_TABLE}1.19.1/dist/bootstrap-table.min.js": f"{_TABLE}bootstrap-table.min.js",
    f"{_UNPKG_TABLE}1.19.1/dist/bootstrap-table.min.css": f"{_TABLE}bootstrap-table.min.css",
    f"{_UNPKG_TABLE}1.19.1/dist/{_FILTER}.min.js": f"{_TABLE}{_FILTER}.min.js",
    f"{_UNPKG_TABLE}1.19.0/dist/{_FILTER}.min.css": f"{_TABLE}{_FILTER}.min.css",
    f"{_UNPKG_TABLE}1.19.0/dist/{_FILTER}.css": f"{_TABLE}{_FILTER}.min.css",
    f"{_CDNJS}bootstrap-datepicker/1.9.0/js/bootstrap-datepicker.min.js":
        f"{_DATEPICKER}js/bootstrap-datepicker.min.js",
    f"{_CDNJS}bootstrap-datepicker/1.9.0/css/bootstrap-datepicker.min.css":
        f"{_DATEPICKER}css/bootstrap-datepicker.min.css",
    f"{_CDNJS}font-awesome/6.6.0/css/all.min.css": "fontawesome-free-6.6.0/css/all.min.css",
    "https://cdn.jsdelivr.net/npm/@forevolve/bootstrap-dark@1.1.0/dist/css/"
    "bootstrap-prefers-dark.css": "bootstrap-dark-1.1.0/dist/css/bootstrap-prefers-dark.css",
    "https://cdn.jsdelivr.net/npm/vega@5": "vega-5.33.1/build/vega.min.js",
    "https://cdn.jsdelivr.net/npm/vega-lite@5": "vega-lite-5.23.0/build/vega-lite.min.js",
    "https://cdn.jsdelivr.net/npm/vega-embed@6": "vega-embed-6.29.0/build/vega-embed.min.js",
}  # fmt: skip

_GX_IMAGES = re.compile(r"https://great-expectations-web-assets\.s3[\w.-]*\.amazonaws\.com/[\w.-]+")
#: A load from elsewhere: a script, a stylesheet or image element, or a CSS url().
_EXTERNAL_LOAD = re.compile(
    r"<script\b[^>]*\bsrc=\"https?://[^\"]*\"[^>]*>\s*</script>"
    r"|<link\b[^>]*\bhref=\"https?://[^\"]*\"[^>]*>"
    r"|<img\b[^>]*\bsrc=\"https?://[^\"]*\"[^>]*>"
    r"|url\(['\"]?https?://[^)]*\)",
    re.IGNORECASE,
)


def installed(assets: Path = ASSETS_DIR) -> bool:
    return all((assets / p.folder / ".complete").exists() for p in PACKAGES.values())


def install(assets: Path = ASSETS_DIR) -> None:
    """Fetch every package not yet installed; each tarball checked before extraction."""
    for package in PACKAGES.values():
        target = assets / package.folder
        if (target / ".complete").exists():
            continue
        with urllib.request.urlopen(package.tarball, timeout=120) as response:
            data = response.read()
        digest = hashlib.sha256(data).hexdigest()
        if digest != package.sha256:
            raise AssetError(f"{package.tarball}: SHA-256 {digest}, pinned {package.sha256}")
        shutil.rmtree(target, ignore_errors=True)
        with tarfile.open(fileobj=io.BytesIO(data)) as tar:
            for member in tar.getmembers():
                inside = member.name.removeprefix("package/")
                if member.isfile() and any(
                    inside == f or (f.endswith("/") and inside.startswith(f)) for f in package.files
                ):
                    member.name = inside
                    tar.extract(member, target, filter="data")
        (target / ".complete").write_text(f"{package.name}@{package.version}\n")
        log.info("installed %s@%s for Data Docs", package.name, package.version)


def vendor_data_docs(site: Path, assets: Path = ASSETS_DIR) -> int:
    """Make the Data Docs site in ``site`` load only its own files; returns how many
    external loads were removed rather than vendored (0 when every one was known)."""
    have = installed(assets)
    if have:
        for package in PACKAGES.values():
            _link_tree(assets / package.folder, site / VENDOR / package.folder)
    removed = 0
    for page in site.rglob("*.html"):
        text = page.read_text(encoding="utf-8")
        root = os.path.relpath(site, page.parent).replace(os.sep, "/")
        for url, file in URLS.items() if have else ():
            text = text.replace(f'"{url}"', f'"{root}/{VENDOR}/{file}"')
        text = _GX_IMAGES.sub(f"{root}/{GX_LOGO}", text)
        text, count = _EXTERNAL_LOAD.subn("", text)
        removed += count
        page.write_text(text, encoding="utf-8")
    if removed:
        why = "not vendored" if have else "assets not installed (python -m " + __name__ + ")"
        log.warning("Data Docs in %s: %d external load(s) removed, %s", site, removed, why)
    return removed


def _link_tree(source: Path, target: Path) -> None:
    for path in source.rglob("*"):
        if path.is_file() and path.name != ".complete":
            destination = target / path.relative_to(source)
            destination.parent.mkdir(parents=True, exist_ok=True)
            try:
                os.link(path, destination)
            except OSError:  # another file system
                shutil.copyfile(path, destination)


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    install()
