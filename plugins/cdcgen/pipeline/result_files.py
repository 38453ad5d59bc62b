"""Where the changes extract leaves its result, one file per attempt of its task.

The summary step reads what each table's Spark job wrote. A task cleared and run again
must not be judged by its previous attempt: if the new attempt dies before writing, an
earlier attempt's "done" would still be there. So each attempt writes its own file
(``<table>.attempt-<N>.json``), the operator opens it as "started, wrote no result"
before spark-submit starts (the job replaces it whole when it ends, success or not), and
the summary reads the highest attempt. Run ids and table names become file names through
:func:`cdcgen.core.user_text.file_name`: ``..`` cannot leave the results folder, and run
ids differing only in ``:`` and ``_`` get different folders.

Light on purpose: the Spark operator imports it when a DAG file is parsed.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cdcgen.adapters.files import write_atomic
from cdcgen.core.changes_status import ChangesRunStatus
from cdcgen.core.user_text import file_name

if TYPE_CHECKING:
    from cdcgen.core.changes_result import ChangesRunResult

#: Under the report directory: one folder per run, result files per table and attempt.
RESULTS_DIR = "changes-results"

_ATTEMPT = re.compile(r"\.attempt-([0-9]{1,6})\.json")


def result_path(report_dir: Path | str, run_id: str, table: str) -> Path:
    """The result file of ``table`` in run ``run_id`` as planned (before any attempt)."""
    return Path(report_dir) / RESULTS_DIR / file_name(run_id) / f"{file_name(table)}.json"


def attempt_path(planned: Path | str, attempt: int) -> Path:
    """The result file attempt ``attempt`` (Airflow's try number) of the task writes."""
    planned = Path(planned)
    return planned.with_name(f"{planned.stem}.attempt-{int(attempt)}.json")


def open_attempt(planned: Path | str, attempt: int) -> Path:
    """Before an attempt's job starts: its file says it ended with no result, until the
    job replaces it. Returns the path the job is to write."""
    path = attempt_path(planned, attempt)
    started = {
        "status": ChangesRunStatus.FAILED,
        "error": f"attempt {attempt} of the extract wrote no result (it died before its end)",
    }
    write_atomic(path, json.dumps(started) + "\n")
    return path


def write_result(path: Path | None, output: Mapping[str, Any], *, echo: bool = True) -> None:
    """A job's result: printed (unless not ``echo``: a follow's sum between its cycles),
    and written whole (rename) to ``path`` when given, success or not."""
    text = json.dumps(output, indent=1, default=str)
    if echo:
        print(text)
    if path is not None:
        write_atomic(path, text + "\n")


def latest_result_file(report_dir: Path | str, run_id: str, table: str) -> Path:
    """The file of the highest attempt, else the planned one (a job run by hand)."""
    planned = result_path(report_dir, run_id, table)
    attempts: list[tuple[int, Path]] = []
    if planned.parent.is_dir():
        for path in planned.parent.glob(f"{planned.stem}.attempt-*.json"):
            match = _ATTEMPT.fullmatch(path.name[len(planned.stem) :])
            if match:
                attempts.append((int(match.group(1)), path))
    return max(attempts)[1] if attempts else planned


def read_result(report_dir: Path | str, run_id: str, table: str) -> ChangesRunResult | None:
    """The newest attempt's result for ``table`` in this run, or ``None`` if none wrote one;
    a file that cannot be read as one is a failed result naming it."""
    from cdcgen.core.changes_result import ChangesRunResult  # not at a DAG file's parse

    path = latest_result_file(report_dir, run_id, table)
    try:
        return ChangesRunResult.from_json(json.loads(path.read_text(encoding="utf-8")))
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        error = f"unreadable result {path}: {exc}"
        return ChangesRunResult(table=table, status=ChangesRunStatus.FAILED, error=error)
