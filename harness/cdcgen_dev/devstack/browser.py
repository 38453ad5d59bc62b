"""Headless Chromium driven by Selenium through Debian's ChromeDriver.

Airflow's UI is a single-page app that fetches its data after load, so a plain
``chromium --screenshot`` may capture a spinner.  Driving the browser lets a test
wait until the page *says* what it should (its visible text), then screenshot it.

Selenium speaks the same W3C WebDriver protocol to the same ``chromedriver`` that
Debian builds from the same source as its ``chromium`` (so the two always match);
both paths are given explicitly, so Selenium Manager never looks for or downloads a
driver or a browser.  Flags are the ones this machine needs: no sandbox as root, no
background network, a fresh profile per session.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterable
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any

from cdcgen_dev.devstack.packages import chromium
from cdcgen_dev.devstack.processes import StackError

if TYPE_CHECKING:
    from selenium.webdriver.chrome.webdriver import WebDriver

CHROMIUM_FLAGS = (
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
    "--hide-scrollbars",
    "--force-device-scale-factor=1",
)

#: How long a page may take to load (Airflow's first page compiles its UI bundle).
PAGE_LOAD_SECONDS = 120.0
#: How often :meth:`Browser.wait_for_text` reads the page's text again.
POLL_SECONDS = 0.5

#: Same-origin iframes included (Airflow shows plugin views in one); cross-origin ones
#: raise on access and are skipped.
_FRAME_TEXT = (
    "let t = document.body ? document.body.innerText : '';"
    "for (const f of document.querySelectorAll('iframe')) {"
    "  try { t += '\\n' + f.contentDocument.body.innerText; } catch (e) {} }"
    "return t;"
)


class Browser:
    """One ChromeDriver + Chromium session; use as a context manager (always quits).

    ``workdir`` keeps ChromeDriver's log (what to read when a session fails to start).
    """

    def __init__(self, workdir: Path, width: int = 1400, height: int = 1000) -> None:
        self.workdir = workdir
        self.width, self.height = width, height
        self._driver: WebDriver | None = None
        self._profile = tempfile.TemporaryDirectory(prefix="cdcgen-chromium-")

    @property
    def log_file(self) -> Path:
        return self.workdir / "chromedriver.log"

    @property
    def driver(self) -> WebDriver:
        if self._driver is None:
            raise StackError("browser not started (use Browser as a context manager)")
        return self._driver

    # --- lifecycle --------------------------------------------------------------------

    def __enter__(self) -> Browser:
        from selenium import webdriver
        from selenium.common.exceptions import WebDriverException
        from selenium.webdriver.chrome.service import Service

        chrome, driver = chromium()
        self.workdir.mkdir(parents=True, exist_ok=True)
        options = webdriver.ChromeOptions()
        options.binary_location = str(chrome)
        for flag in (
            *CHROMIUM_FLAGS,
            f"--user-data-dir={self._profile.name}",
            f"--window-size={self.width},{self.height}",
        ):
            options.add_argument(flag)
        service = Service(executable_path=str(driver), log_output=str(self.log_file))
        try:
            self._driver = webdriver.Chrome(options=options, service=service)
        except WebDriverException as exc:
            self._profile.cleanup()
            raise StackError(
                f"Chromium did not start: {exc.msg}\n(ChromeDriver log: {self.log_file})"
            ) from None
        self._driver.set_page_load_timeout(PAGE_LOAD_SECONDS)
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        """Quit the session; ``quit`` also stops ChromeDriver, which ends Chromium."""
        try:
            if self._driver is not None:
                self._driver.quit()
        finally:
            self._driver = None
            self._profile.cleanup()

    # --- what tests use ---------------------------------------------------------------

    def open(self, url: str) -> None:
        self.driver.get(url)

    def script(self, source: str, *args: Any) -> Any:
        return self.driver.execute_script(source, *args)

    def text(self) -> str:
        """The page's visible text (``innerText``; an iframe's text is not included)."""
        return str(self.script("return document.body ? document.body.innerText : '';"))

    def frame_text(self) -> str:
        """Visible text of the page and of same-origin iframes (Airflow's plugin views)."""
        return str(self.script(_FRAME_TEXT))

    def count(self, css: str) -> int:
        from selenium.webdriver.common.by import By

        return len(self.driver.find_elements(By.CSS_SELECTOR, css))

    def wait_for_count(self, css: str, at_least: int, timeout: float = 60.0) -> int:
        """Poll until ``css`` matches ``at_least`` elements; returns how many it matched.

        Pages such as Airflow's grid draw their frame first and fill the cells from a
        second request, so the text being there does not mean the cells are.
        """
        from selenium.common.exceptions import TimeoutException
        from selenium.webdriver.support.wait import WebDriverWait

        seen = 0

        def enough(_: WebDriver) -> int | None:
            nonlocal seen
            seen = self.count(css)
            return seen if seen >= at_least else None

        try:
            return int(
                WebDriverWait(self.driver, timeout, poll_frequency=POLL_SECONDS).until(enough)
            )
        except TimeoutException:
            raise StackError(
                f"page showed {seen} element(s) matching {css!r}, wanted {at_least};"
                f" it shows:\n{self.text()[:3000]}"
            ) from None

    def wait_for_text(
        self, expected: Iterable[str], timeout: float = 60.0, frames: bool = False
    ) -> str:
        """Poll until every string in ``expected`` is visible; returns the text seen.

        On timeout the error lists what is missing and what the page shows instead,
        which is what one needs to tell a slow page from a wrong one.
        """
        from selenium.common.exceptions import TimeoutException
        from selenium.webdriver.support.wait import WebDriverWait

        wanted = list(expected)
        seen = ""

        def shows_everything(_: WebDriver) -> str | None:
            nonlocal seen
            seen = self.frame_text() if frames else self.text()
            return seen if all(item in seen for item in wanted) else None

        try:
            return str(
                WebDriverWait(self.driver, timeout, poll_frequency=POLL_SECONDS).until(
                    shows_everything
                )
            )
        except TimeoutException:
            missing = [item for item in wanted if item not in seen]
            raise StackError(f"page never showed {missing}; it shows:\n{seen[:3000]}") from None

    def full_page_screenshot(self, path: Path, max_height: int = 6000) -> Path:
        """The whole page, not only the window: grow the window to the document's height."""
        height = int(self.script("return document.documentElement.scrollHeight;"))
        self.driver.set_window_size(self.width, min(height, max_height))
        try:
            return self.screenshot(path)
        finally:
            self.driver.set_window_size(self.width, self.height)

    def screenshot(self, path: Path) -> Path:
        """The window's content as a PNG file."""
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(self.driver.get_screenshot_as_png())
        return path
