"""Headless Chromium driven through ChromeDriver's W3C WebDriver API, standard library only.

Airflow's UI is a single-page app that fetches its data after load, so a plain
``chromium --screenshot`` may capture a spinner.  Driving ChromeDriver lets a test
wait until the page *says* what it should (its visible text), then screenshot it.
Flags are the ones this machine needs: no sandbox as root, no background network,
a fresh profile per session.
"""

from __future__ import annotations

import base64
import json
import os
import socket
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterable
from pathlib import Path
from types import TracebackType
from typing import Any

from cdcgen_dev.devstack.packages import chromium
from cdcgen_dev.devstack.processes import Managed, StackError

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


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


class Browser:
    """One ChromeDriver + Chromium session; use as a context manager (always quits)."""

    def __init__(self, workdir: Path, width: int = 1400, height: int = 1000) -> None:
        self.workdir = workdir
        self.width, self.height = width, height
        self.port = _free_port()
        self.driver = Managed(
            "chromedriver", workdir / "chromedriver.pid", workdir / "chromedriver.log"
        )
        self.session: str | None = None
        self._profile = tempfile.TemporaryDirectory(prefix="cdcgen-chromium-")

    # --- WebDriver plumbing -----------------------------------------------------------

    def _call(self, method: str, path: str, body: Any = None, timeout: float = 60.0) -> Any:
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(
            f"http://127.0.0.1:{self.port}{path}",
            data=data,
            method=method,
            headers={"Content-Type": "application/json"},
        )
        try:
            with urllib.request.urlopen(request, timeout=timeout) as response:
                answer = json.loads(response.read() or b"{}")
        except urllib.error.HTTPError as exc:
            raise StackError(f"WebDriver {method} {path}: {exc.read().decode()[:1500]}") from None
        return answer.get("value")

    def _session_call(self, method: str, path: str, body: Any = None, timeout: float = 60.0) -> Any:
        if self.session is None:
            raise StackError("browser not started")
        return self._call(method, f"/session/{self.session}{path}", body, timeout)

    # --- lifecycle --------------------------------------------------------------------

    def __enter__(self) -> Browser:
        chrome, driver = chromium()
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.driver.start([str(driver), f"--port={self.port}"], env=dict(os.environ))
        deadline = time.monotonic() + 30
        while True:
            try:
                if self._call("GET", "/status", timeout=5).get("ready"):
                    break
            except (OSError, StackError):
                pass
            if time.monotonic() > deadline:
                raise StackError(f"chromedriver did not start:\n{self.driver.tail()}")
            time.sleep(0.3)
        capabilities = {
            "capabilities": {
                "alwaysMatch": {
                    "browserName": "chrome",
                    "goog:chromeOptions": {
                        "binary": str(chrome),
                        "args": [
                            *CHROMIUM_FLAGS,
                            f"--user-data-dir={self._profile.name}",
                            f"--window-size={self.width},{self.height}",
                        ],
                    },
                }
            }
        }
        self.session = self._call("POST", "/session", capabilities, timeout=120)["sessionId"]
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        try:
            if self.session is not None:
                self._session_call("DELETE", "", timeout=30)
        except (OSError, StackError):
            pass
        finally:
            self.session = None
            self.driver.stop(timeout=10)
            self._profile.cleanup()

    # --- what tests use ---------------------------------------------------------------

    def open(self, url: str) -> None:
        self._session_call("POST", "/url", {"url": url}, timeout=120)

    def script(self, source: str, *args: Any) -> Any:
        return self._session_call("POST", "/execute/sync", {"script": source, "args": list(args)})

    def text(self) -> str:
        """The page's visible text (``innerText``; an iframe's text is not included)."""
        return str(self.script("return document.body ? document.body.innerText : '';"))

    def frame_text(self) -> str:
        """Visible text of the page and of same-origin iframes (Airflow's plugin views)."""
        return str(
            self.script(
                "let t = document.body ? document.body.innerText : '';"
                "for (const f of document.querySelectorAll('iframe')) {"
                "  try { t += '\\n' + f.contentDocument.body.innerText; } catch (e) {} }"
                "return t;"
            )
        )

    def count(self, css: str) -> int:
        return int(self.script("return document.querySelectorAll(arguments[0]).length;", css))

    def wait_for_text(
        self, expected: Iterable[str], timeout: float = 60.0, frames: bool = False
    ) -> str:
        """Poll until every string in ``expected`` is visible; returns the text seen."""
        wanted = list(expected)
        deadline = time.monotonic() + timeout
        while True:
            seen = self.frame_text() if frames else self.text()
            if all(item in seen for item in wanted):
                return seen
            if time.monotonic() > deadline:
                missing = [item for item in wanted if item not in seen]
                raise StackError(f"page never showed {missing}; it shows:\n{seen[:3000]}")
            time.sleep(0.5)

    def full_page_screenshot(self, path: Path, max_height: int = 6000) -> Path:
        """The whole page, not only the window: grow the window to the document's height."""
        height = int(self.script("return document.documentElement.scrollHeight;"))
        self._session_call(
            "POST", "/window/rect", {"width": self.width, "height": min(height, max_height)}
        )
        try:
            return self.screenshot(path)
        finally:
            self._session_call("POST", "/window/rect", {"width": self.width, "height": self.height})

    def screenshot(self, path: Path) -> Path:
        data = self._session_call("GET", "/screenshot")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(base64.b64decode(data))
        return path
