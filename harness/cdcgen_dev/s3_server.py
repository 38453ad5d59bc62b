"""An S3-compatible server on loopback for the object-store tests: moto's server mode.

moto runs from its own virtualenv (``.venv-s3``, made by ``make setup`` from
``harness/s3-server-requirements.txt``): its botocore cannot share the pinned stack's
python-dateutil. It serves S3's conditional writes (``If-None-Match: *``), which the
lake's commits and first-writer-wins records rely on, so what the tests see is what
AWS S3 does. The server dies with the process that started it.
"""

from __future__ import annotations

import os
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from cdcgen_dev.paths import REPO_ROOT
from cdcgen_dev.spark_cluster import LOOPBACK, die_with_parent, free_port

MOTO_SERVER = REPO_ROOT / ".venv-s3" / "bin" / "moto_server"

#: moto accepts any credentials; these stand for a user's (never real ones).
ACCESS = {"AWS_ACCESS_KEY_ID": "cdcgen-test", "AWS_SECRET_ACCESS_KEY": "cdcgen-test-secret"}
REGION = "us-east-1"


class S3ServerError(RuntimeError):
    """The server did not come up (the message names its log)."""


@dataclass(frozen=True)
class S3Server:
    endpoint_url: str

    @property
    def env(self) -> Mapping[str, str]:
        """What a lake user sets to reach this server (``AWS_*``)."""
        return {**ACCESS, "AWS_ENDPOINT_URL": self.endpoint_url, "AWS_REGION": REGION}

    def create_bucket(self, name: str) -> None:
        from pyarrow.fs import S3FileSystem

        host = self.endpoint_url.removeprefix("http://")
        s3 = S3FileSystem(
            access_key=ACCESS["AWS_ACCESS_KEY_ID"],
            secret_key=ACCESS["AWS_SECRET_ACCESS_KEY"],
            region=REGION,
            endpoint_override=host,
            scheme="http",
            allow_bucket_creation=True,
        )
        s3.create_dir(name)


@contextmanager
def s3_server(log_dir: Path) -> Iterator[S3Server]:
    """A running moto S3 server; stopped on exit."""
    if not MOTO_SERVER.exists():
        raise S3ServerError(f"{MOTO_SERVER} is missing: run make setup")
    port = free_port()
    log_dir.mkdir(parents=True, exist_ok=True)
    log = log_dir / f"moto-{port}.log"
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    with log.open("wb") as out:
        process = subprocess.Popen(
            [str(MOTO_SERVER), "-H", LOOPBACK, "-p", str(port)],
            stdout=out,
            stderr=subprocess.STDOUT,
            env=env,
            preexec_fn=die_with_parent,
        )
    endpoint = f"http://{LOOPBACK}:{port}"
    try:
        _wait_ready(endpoint, process, log)
        yield S3Server(endpoint)
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def _wait_ready(endpoint: str, process: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise S3ServerError(f"moto_server exited ({process.returncode}); see {log}")
        try:
            with urllib.request.urlopen(f"{endpoint}/moto-api/", timeout=2):
                return
        except urllib.error.HTTPError:
            return  # it answers
        except OSError:
            time.sleep(0.2)
    raise S3ServerError(f"moto_server did not answer within 30 s; see {log}")
