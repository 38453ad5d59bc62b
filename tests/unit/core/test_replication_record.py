"""A replication run's record as a model (cdcgen.core.replication_record): the JSON that
leaves the process (the report site's files, XCom, the CLI's line, the bootstrap job's
result file) keeps the keys, their order and their values each writer gave it, and the
records older runs left still read."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from cdcgen.airflow.replication_steps import mode_param
from cdcgen.airflow.run_params import run_params
from cdcgen.config import PipelineConfig
from cdcgen.core.cdc_log import TableRef
from cdcgen.core.copy_progress import CopyProgress
from cdcgen.core.replication_plan import SinkProgress
from cdcgen.core.replication_record import ReplicationRecord
from cdcgen.errors import ConfigError
from cdcgen.replication.replication_run import Mode, Replication, _finish, _record, needs_bootstrap
from cdcgen.reports.replication_records import (
    RECORDS_DIR,
    load_records,
    read_runs,
    save_record,
)

T0 = datetime(2026, 11, 1, 9, 0, tzinfo=UTC)
COMMON = {
    "source_table": "shop.orders",
    "sink_table": "dr.orders",
    "run_id": "scheduled__2026-11-01T09:00:00+00:00",
    "started_at": T0.isoformat(),
    "consistent_from": (T0 - timedelta(hours=1)).isoformat(),
}
REFUSED_CHANGE = {
    "write_time": (T0 - timedelta(minutes=20)).isoformat(),
    "cdc_time": "6f1c2e40-b7c5-11f0-8de9-0242ac120002",
    "stream_id": "7ff9a3c2000000005e1b0a7d00000042",
    "reason": "dr.orders.items: removed list elements are logged by cell key",
}
ENDED = {
    "ended_at": (T0 + timedelta(seconds=30)).isoformat(),
    "consistent_until": (T0 - timedelta(seconds=5)).isoformat(),
    "bootstrapped_at": (T0 - timedelta(days=2)).isoformat(),
    "lag_seconds": 35.0,
}

#: Each record as the run wrote it before it was a model, keys in the order it added them.
WRITTEN: dict[str, dict[str, Any]] = {
    "apply after a bootstrap, a change refused": {
        "kind": "apply",
        **COMMON,
        "bootstrap": {"bootstrapped_at": ENDED["bootstrapped_at"], "copied_rows": 85_211},
        "applied_from": COMMON["consistent_from"],
        "lake_version": 7,
        "peer_log_rows_skipped": 2,
        "slices": 3,
        "largest_slice_rows": 400,
        "applied_operations": {"insert": 900, "update": 300},
        **ENDED,
        "applied_log_rows": 1200,
        "applied_batches": 600,
        "rejected": [REFUSED_CHANGE],
        "rejected_count": 3,
        "status": "rejected",
    },
    "apply with nothing new": {
        "kind": "apply",
        **COMMON,
        **ENDED,
        "applied_log_rows": 0,
        "applied_batches": 0,
        "rejected": [],
        "rejected_count": 0,
        "status": "ok",
    },
    "apply, dry run": {
        "kind": "apply",
        **COMMON,
        "dry_run": True,
        "would_apply_from": COMMON["consistent_from"],
        "would_apply_until": T0.isoformat(),
        "ended_at": ENDED["ended_at"],
        "rejected": [],
        "rejected_count": 0,
        "status": "dry-run",
    },
    "bootstrap": {
        "kind": "bootstrap",
        **COMMON,
        "consistent_from": None,
        "copied_rows": 85_211,
        "truncated": True,
        "copied_rows_now": 40_000,
        "resumed_ranges": 12,
        "copy_ranges": 256,
        **ENDED,
        "lag_seconds": None,
        "applied_log_rows": 0,
        "applied_batches": 0,
        "rejected": [],
        "rejected_count": 0,
        "status": "ok",
    },
    "bootstrap, dry run": {
        "kind": "bootstrap",
        **COMMON,
        "dry_run": True,
        "snapshot_at": T0.isoformat(),
        "would_truncate": None,
        "resumes_copy": False,
        "sink_cluster": "sink cluster",
        "ended_at": ENDED["ended_at"],
        "rejected": [],
        "rejected_count": 0,
        "status": "dry-run",
    },
    "bootstrap job refused": {
        "kind": "bootstrap",
        "source_table": "shop.orders",
        "sink_table": "dr.orders",
        "run_id": "",
        "status": "refused",
        "error": "dr.orders is not empty: bootstrap it with --replace",
    },
}


@pytest.mark.parametrize("name", WRITTEN)
def test_every_record_keeps_its_keys_order_and_values_through_the_model(name: str) -> None:
    written = WRITTEN[name]
    record = ReplicationRecord.from_json(json.loads(json.dumps(written)))
    assert record.to_json() == written
    # The bootstrap job's result file and the CLI's line print it as it comes.
    assert json.dumps(record.to_json()) == json.dumps(written)
    assert json.dumps(record.to_json(), default=str, indent=1) == json.dumps(written, indent=1)


def test_the_json_holds_json_values_only() -> None:
    """XCom would keep a tuple as an object of its own."""
    record = ReplicationRecord.from_json(WRITTEN["apply after a bootstrap, a change refused"])
    data = record.to_json()
    assert isinstance(data["rejected"], list) and isinstance(data["rejected"][0], dict)
    assert isinstance(data["bootstrap"], dict)
    assert json.loads(json.dumps(data)) == data


def test_an_update_adds_its_keys_and_validates_them() -> None:
    failed = ReplicationRecord(kind="bootstrap", source_table="a.b", sink_table="c.b", run_id="")
    done = failed.updated(status="incomplete", error="stopped")
    assert list(done.to_json()) == [
        "kind",
        "source_table",
        "sink_table",
        "run_id",
        "status",
        "error",
    ]
    assert list(failed.to_json()) == ["kind", "source_table", "sink_table", "run_id"]
    with pytest.raises(ValueError, match="status"):
        failed.updated(status="no such status")


def test_the_run_builds_the_record_it_always_wrote(tmp_path: Path) -> None:
    """``_record`` then ``_finish``: the apply's keys, the file kept on the report site,
    and that file read back as the same record."""
    config = PipelineConfig(report_dir=tmp_path)
    job = Replication(TableRef("shop", "orders"), TableRef("dr", "orders"))
    before = SinkProgress(job.source, job.sink, consistent_until=T0 - timedelta(hours=1))
    record = _record(job, COMMON["run_id"], T0, before).updated(
        applied_from=COMMON["consistent_from"], lake_version=7
    )
    after = SinkProgress(
        job.source, job.sink, consistent_until=T0, bootstrapped_at=T0 - timedelta(days=2)
    )
    finished = _finish(config, record, after, 40, 20, [REFUSED_CHANGE], 3)
    assert list(finished.to_json()) == [
        "kind", "source_table", "sink_table", "run_id", "started_at", "consistent_from",
        "applied_from", "lake_version", "ended_at", "consistent_until", "bootstrapped_at",
        "lag_seconds", "applied_log_rows", "applied_batches", "rejected", "rejected_count",
        "status",
    ]  # fmt: skip
    assert finished.status == "rejected" and finished.rejected_count == 3
    assert finished.rejected[0].cdc_time == REFUSED_CHANGE["cdc_time"]
    (path,) = (tmp_path / RECORDS_DIR).glob("*/*.json")
    assert json.loads(path.read_text()) == finished.to_json()
    assert load_records(tmp_path) == ([finished], [])


def test_a_saved_record_reads_back_equal_and_an_older_one_still_reads(tmp_path: Path) -> None:
    saved = ReplicationRecord.from_json(WRITTEN["apply after a bootstrap, a change refused"])
    save_record(tmp_path, saved)
    older = {  # before runs wrote ``rejected_count`` (and a kind, a run id, a status)
        "source_table": "shop.customers",
        "sink_table": "dr.customers",
        **ENDED,
        "rejected": [REFUSED_CHANGE, REFUSED_CHANGE],
    }
    folder = tmp_path / RECORDS_DIR / "dr.customers"
    folder.mkdir(parents=True)
    (folder / "old.json").write_text(json.dumps(older))
    records, unread = load_records(tmp_path)
    assert unread == [] and saved in records
    (old,) = [r for r in records if r.sink_table == "dr.customers"]
    assert old.to_json() == older
    runs, problems = read_runs(records)
    assert problems == []
    (run,) = [r for r in runs if r.sink_table == "dr.customers"]
    assert run.kind == "apply" and run.status == "ok" and run.rejected_count == 2


def test_a_record_never_ended_is_not_saved(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="has not ended"):
        save_record(tmp_path, ReplicationRecord(source_table="a.b", sink_table="c.b"))


def test_a_file_holding_no_record_is_named(tmp_path: Path) -> None:
    folder = tmp_path / RECORDS_DIR / "dr.orders"
    folder.mkdir(parents=True)
    (folder / "a.json").write_text(json.dumps({"sink_table": "dr.orders", "run_id": "r1"}))
    (folder / "b.json").write_text("[1, 2]")
    (folder / "c.json").write_text("{not json")  # only logged: a file being written
    records, unread = load_records(tmp_path)
    assert records == []
    assert len(unread) == 2
    assert "dr.orders, run r1: source_table: Field required" in unread[0]
    assert "not an object" in unread[1]


@pytest.mark.parametrize(
    ("mode", "never", "bootstrapped", "unfinished"),
    [
        (Mode.APPLY, False, False, False),
        (Mode.BOOTSTRAP_IF_NEEDED, True, False, True),
        (Mode.BOOTSTRAP, True, True, True),
        (Mode.BOOTSTRAP_REPLACE, True, True, True),
    ],
)
def test_a_run_copies_first_when_its_mode_asks_or_allows_it(
    mode: Mode, never: bool, bootstrapped: bool, unfinished: bool
) -> None:
    source, sink = TableRef("shop", "orders"), TableRef("dr", "orders")
    new = SinkProgress(source, sink)
    done = SinkProgress(source, sink, consistent_until=T0)
    copy = CopyProgress(snapshot_at=T0, truncate=False)
    assert needs_bootstrap(mode, new, None) is never
    assert needs_bootstrap(mode, done, None) is bootstrapped
    assert needs_bootstrap(mode, done, copy) is unfinished


def test_the_dags_mode_param_keeps_its_three_values() -> None:
    """Its ``apply`` bootstraps a sink table that needs it; nothing else is accepted."""
    assert mode_param(run_params({})) is Mode.BOOTSTRAP_IF_NEEDED
    assert mode_param(run_params({"mode": "apply"})) is Mode.BOOTSTRAP_IF_NEEDED
    assert mode_param(run_params({"mode": "bootstrap"})) is Mode.BOOTSTRAP
    assert mode_param(run_params({"mode": "bootstrap-replace"})) is Mode.BOOTSTRAP_REPLACE
    expected = "expected one of apply, bootstrap, bootstrap-replace"
    for unknown in ("bootstrap-if-needed", "replace"):
        with pytest.raises(ConfigError, match=expected):
            mode_param(run_params({"mode": unknown}))
