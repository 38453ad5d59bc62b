"""A small client for Airflow 3's REST API (``/api/v2``): token, trigger, backfill, wait.

Standard library only, so the harness needs nothing beyond the stack.  Tokens come
from SimpleAuthManager: ``GET /auth/token`` when every user is an admin (the dev
stack's setting), ``POST /auth/token`` with a username and password otherwise.
"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any

from cdcgen_dev.devstack.processes import StackError

TERMINAL_RUN_STATES = frozenset({"success", "failed"})


class ApiError(StackError):
    def __init__(self, status: int, method: str, path: str, body: str) -> None:
        super().__init__(f"{method} {path} -> HTTP {status}: {body[:2000]}")
        self.status = status


class AirflowApi:
    def __init__(
        self,
        base_url: str,
        username: str | None = None,
        password: str | None = None,
        timeout: float = 30.0,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.username = username
        self.password = password
        self.timeout = timeout
        self._token: str | None = None

    # --- plumbing ---------------------------------------------------------------------

    def _send(
        self, method: str, path: str, body: Any = None, auth: bool = True, raw: bool = False
    ) -> Any:
        data = None if body is None else json.dumps(body, default=_json_default).encode()
        request = urllib.request.Request(self.base_url + path, data=data, method=method)
        request.add_header("Accept", "application/json")
        if data is not None:
            request.add_header("Content-Type", "application/json")
        if auth:
            request.add_header("Authorization", f"Bearer {self.token()}")
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                payload = response.read()
        except urllib.error.HTTPError as exc:
            raise ApiError(exc.code, method, path, exc.read().decode(errors="replace")) from None
        except (urllib.error.URLError, TimeoutError, ConnectionError) as exc:
            raise StackError(f"{method} {self.base_url}{path}: {exc}") from exc
        if raw:
            return payload
        return json.loads(payload) if payload else None

    def token(self) -> str:
        if self._token is None:
            if self.username:
                body = {"username": self.username, "password": self.password or ""}
                answer = self._send("POST", "/auth/token", body, auth=False)
            else:
                answer = self._send("GET", "/auth/token", auth=False)
            self._token = str(answer["access_token"])
        return self._token

    def get(self, path: str, **query: Any) -> Any:
        if query:
            path += "?" + urllib.parse.urlencode(query, doseq=True)
        return self._send("GET", path)

    def post(self, path: str, body: Any) -> Any:
        return self._send("POST", path, body)

    def patch(self, path: str, body: Any) -> Any:
        return self._send("PATCH", path, body)

    def health(self) -> dict[str, Any]:
        answer: dict[str, Any] = self._send("GET", "/api/v2/monitor/health", auth=False)
        return answer

    # --- DAGs and runs ----------------------------------------------------------------

    def wait_for_dag(self, dag_id: str, timeout: float = 300.0) -> dict[str, Any]:
        """Until the DAG processor has parsed ``dag_id``; import errors end the wait early."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                dag: dict[str, Any] = self.get(f"/api/v2/dags/{dag_id}")
                return dag
            except ApiError as exc:
                if exc.status != 404:
                    raise
            errors = self.get("/api/v2/importErrors").get("import_errors", [])
            mine = [e for e in errors if dag_id in str(e.get("filename", ""))]
            if mine:
                raise StackError(f"{dag_id} does not import: {mine[0].get('stack_trace', mine)}")
            if time.monotonic() > deadline:
                raise StackError(f"DAG {dag_id} not parsed after {timeout:.0f} s")
            time.sleep(2)

    def unpause(self, dag_id: str) -> None:
        self.patch(f"/api/v2/dags/{dag_id}", {"is_paused": False})

    def trigger(
        self, dag_id: str, conf: Mapping[str, Any] | None = None, run_id: str | None = None
    ) -> dict[str, Any]:
        body: dict[str, Any] = {"logical_date": None, "conf": dict(conf or {})}
        if run_id:
            body["dag_run_id"] = run_id
        run: dict[str, Any] = self.post(f"/api/v2/dags/{dag_id}/dagRuns", body)
        return run

    def backfill(
        self,
        dag_id: str,
        from_date: datetime,
        to_date: datetime,
        conf: Mapping[str, Any] | None = None,
        max_active_runs: int = 1,
    ) -> dict[str, Any]:
        backfill: dict[str, Any] = self.post(
            "/api/v2/backfills",
            {
                "dag_id": dag_id,
                "from_date": from_date,
                "to_date": to_date,
                "dag_run_conf": dict(conf or {}),
                "reprocess_behavior": "completed",
                "max_active_runs": max_active_runs,
                "run_backwards": False,
            },
        )
        return backfill

    def runs(self, dag_id: str, **query: Any) -> list[dict[str, Any]]:
        answer = self.get(f"/api/v2/dags/{dag_id}/dagRuns", limit=100, **query)
        runs: list[dict[str, Any]] = answer["dag_runs"]
        return runs

    def task_instances(self, dag_id: str, run_id: str) -> list[dict[str, Any]]:
        quoted = urllib.parse.quote(run_id, safe="")
        answer = self.get(f"/api/v2/dags/{dag_id}/dagRuns/{quoted}/taskInstances", limit=100)
        instances: list[dict[str, Any]] = answer["task_instances"]
        return instances

    def xcom(self, dag_id: str, run_id: str, task_id: str, key: str = "return_value") -> Any:
        """A task's XCom value, as the task returned it (JSON)."""
        answer = self.get(
            f"/api/v2/dags/{dag_id}/dagRuns/{urllib.parse.quote(run_id, safe='')}"
            f"/taskInstances/{task_id}/xcomEntries/{key}"
        )
        value = answer["value"]
        return json.loads(value) if isinstance(value, str) else value

    def task_log(self, dag_id: str, run_id: str, task_id: str, map_index: int = -1) -> str:
        """The text of a task's latest try (for failure messages)."""
        quoted = urllib.parse.quote(run_id, safe="")
        instance = f"/api/v2/dags/{dag_id}/dagRuns/{quoted}/taskInstances/{task_id}"
        ti = self.get(f"{instance}/{map_index}" if map_index >= 0 else instance)
        path = (
            f"{instance}/logs/{max(1, int(ti.get('try_number') or 1))}"
            f"?full_content=true&map_index={map_index}"
        )
        answer = self.get(path)
        lines = []
        for entry in answer.get("content") or ():
            if isinstance(entry, dict):
                text = str(entry.get("event", ""))
                for detail in entry.get("error_detail") or ():
                    text += f" {detail.get('exc_type')}: {detail.get('exc_value')}"
                lines.append(f"{entry.get('level', '')} {text}".strip())
            else:
                lines.append(str(entry))
        return "\n".join(lines)

    def wait_for_runs(
        self, dag_id: str, run_ids: Iterable[str], timeout: float = 900.0, poll: float = 3.0
    ) -> dict[str, str]:
        """Block until every run is success or failed; returns run id -> state."""
        wanted = set(run_ids)
        deadline = time.monotonic() + timeout
        while True:
            states = {
                r["dag_run_id"]: r["state"] for r in self.runs(dag_id) if r["dag_run_id"] in wanted
            }
            if wanted <= set(states) and all(s in TERMINAL_RUN_STATES for s in states.values()):
                return states
            if time.monotonic() > deadline:
                raise StackError(f"runs of {dag_id} not finished after {timeout:.0f} s: {states}")
            time.sleep(poll)


def _json_default(value: Any) -> str:
    if isinstance(value, datetime):
        return value.isoformat()
    raise TypeError(f"not JSON serializable: {value!r}")
