"""What a DAG run tells the outside, caught on loopback: a StatsD listener for Airflow's
metrics (``[metrics] statsd_on`` pointed at it) and a webhook for the alerts notifier
(the ``cdcgen_alerts`` connection pointed at it).

An e2e test starts them around a run it makes anyway and hands :meth:`env` to it, so
the metrics and the alerts are checked on a real ``airflow dags test`` without a run
of their own.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from cdcgen.airflow.connections import ALERTS_CONN_ID, env_var_name

#: Airflow's ``[metrics] statsd_prefix`` default: in front of every name it sends.
AIRFLOW_PREFIX = "airflow."


@dataclass(frozen=True)
class Packet:
    """One StatsD line: its name (Airflow's prefix removed), InfluxDB-style tags if any,
    value, type (``c``, ``g``, ``ms``) and when it arrived (``time.time()``)."""

    name: str
    tags: dict[str, str]
    value: float
    kind: str
    at: float


def parse(line: str, at: float) -> Packet:
    """``airflow.cdcgen.x,cluster=c,table=t:12|c`` -> its parts."""
    head, _, rest = line.partition(":")
    value, _, kind = rest.partition("|")
    name, *pairs = head.split(",")
    tags = dict(pair.split("=", 1) for pair in pairs)
    return Packet(name.removeprefix(AIRFLOW_PREFIX), tags, float(value), kind.split("|")[0], at)


class Listener:
    """A StatsD server on a free UDP port of 127.0.0.1 and a webhook on a free TCP port,
    each keeping what it receives."""

    def __init__(self) -> None:
        self.packets: list[Packet] = []
        self.alerts: list[dict[str, Any]] = []
        self._udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self._udp.bind(("127.0.0.1", 0))
        self._udp.settimeout(0.2)
        self._stop = threading.Event()
        alerts = self.alerts

        class Hook(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["Content-Length"]))
                alerts.append(json.loads(body))
                self.send_response(204)
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self._http = ThreadingHTTPServer(("127.0.0.1", 0), Hook)
        self._threads = [
            threading.Thread(target=self._receive, daemon=True),
            threading.Thread(target=self._http.serve_forever, args=(0.05,), daemon=True),
        ]

    def _receive(self) -> None:
        while not self._stop.is_set():
            try:
                data = self._udp.recv(65536)
            except TimeoutError:
                continue
            now = time.time()
            self.packets += [parse(line, now) for line in data.decode().splitlines() if line]

    def env(self, *, tags: bool) -> dict[str, str]:
        """Airflow's metrics to this listener (``tags``: InfluxDB-style tags, else plain
        StatsD), and the alerts connection to this webhook."""
        port = self._http.server_address[1]
        hook = {"conn_type": "http", "host": f"http://127.0.0.1:{port}/alerts"}
        return {
            "AIRFLOW__METRICS__STATSD_ON": "True",
            "AIRFLOW__METRICS__STATSD_HOST": "127.0.0.1",
            "AIRFLOW__METRICS__STATSD_PORT": str(self._udp.getsockname()[1]),
            "AIRFLOW__METRICS__STATSD_INFLUXDB_ENABLED": str(tags),
            env_var_name(ALERTS_CONN_ID): json.dumps(hook),
        }

    def cdcgen(self) -> list[Packet]:
        """The pipeline's own metrics among all Airflow sent."""
        return [p for p in self.packets if p.name.startswith("cdcgen.")]

    def one(self, name: str, **tags: str) -> Packet:
        """The only packet named ``name`` with these tags (fails naming what came)."""
        found = [p for p in self.cdcgen() if p.name == name and p.tags == tags]
        assert len(found) == 1, (name, tags, self.cdcgen())
        return found[0]


@contextmanager
def listening() -> Iterator[Listener]:
    """A :class:`Listener`, stopped at the end (its packets and alerts kept)."""
    listener = Listener()
    for thread in listener._threads:
        thread.start()
    try:
        yield listener
    finally:
        time.sleep(0.5)  # a last datagram still in flight
        listener._stop.set()
        listener._http.shutdown()
        listener._http.server_close()
        for thread in listener._threads:
            thread.join(timeout=5)
        listener._udp.close()
