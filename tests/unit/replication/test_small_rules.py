"""The replication run's small rules: what identifies a change across clusters, how
changes are cut into chunks, where the sink's settings come from."""

from __future__ import annotations

from datetime import UTC, datetime

import pyarrow as pa
import pytest

from cdcgen.config import PipelineConfig
from cdcgen.replication.change_slices import batch_chunks
from cdcgen.replication.peers import Fingerprint, fingerprints
from cdcgen.replication.replication_run import sink_environment

WRITTEN = datetime(2026, 11, 24, tzinfo=UTC)


def fingerprint(row: dict[str, object]) -> Fingerprint:
    """A row's fingerprint, computed as the apply computes a chunk's."""
    (only,) = fingerprints(pa.Table.from_pylist([row]))
    return only


def change(stream: bytes, time: str, seq: int, **values: object) -> dict[str, object]:
    return {"cdc$stream_id": stream, "cdc$time": time, "cdc$batch_seq_no": seq,
            "cdc$end_of_batch": True, "cdc$operation": 1, "write_time": WRITTEN,
            "pk": 1, "ck": 2, **values}  # fmt: skip


def test_the_same_write_logged_by_two_clusters_has_one_fingerprint() -> None:
    here = change(b"\x01" * 16, "t-here", 0, tags=["a", "b"], attrs=[("k", "v")])
    there = change(b"\x02" * 16, "t-there", 3, tags=["a", "b"], attrs=[("k", "v")])
    assert fingerprint(here) == fingerprint(there)
    hash(fingerprint(here))  # collections are frozen: usable in a set


def test_a_replayed_ttl_is_the_same_change() -> None:
    here = change(b"\x01" * 16, "t-here", 0, v="x", **{"cdc$ttl": 86_400})
    there = change(b"\x02" * 16, "t-there", 0, v="x", **{"cdc$ttl": 85_700})  # what was left
    assert fingerprint(here) == fingerprint(there)


def test_a_different_value_or_time_is_another_change() -> None:
    base = fingerprint(change(b"\x01", "t", 0, v="x"))
    assert fingerprint(change(b"\x01", "t", 0, v="y")) != base
    later = change(b"\x01", "t", 0, v="x") | {"write_time": datetime(2027, 1, 1, tzinfo=UTC)}
    assert fingerprint(later) != base


def test_chunks_never_cut_a_cdc_batch() -> None:
    batches = [(b"a", "t1")] * 3 + [(b"b", "t1")] * 5 + [(b"a", "t2")] + [(b"b", "t2")] * 4
    table = pa.table({
        "cdc$stream_id": pa.array([s for s, _ in batches], pa.binary()),
        "cdc$time": pa.array([t for _, t in batches]),
        "n": range(len(batches)),
    })  # fmt: skip
    chunks = list(batch_chunks(table, rows=4))
    assert sum(c.num_rows for c in chunks) == len(batches)
    seen: set[tuple[bytes, str]] = set()
    for chunk in chunks:
        keys = set(zip(chunk.column(0).to_pylist(), chunk.column(1).to_pylist(), strict=True))
        assert not keys & seen  # a CDC batch lies in one chunk
        seen |= keys
    assert [c.num_rows for c in chunks] == [8, 5]  # cut at the first boundary past 4 rows
    assert list(batch_chunks(table.slice(0, 0), rows=4)) == []


def test_the_sink_takes_its_own_settings_and_credentials() -> None:
    env = {
        "CDCGEN_CONTACT_POINTS": "10.0.0.1",
        "CDCGEN_USERNAME": "source_user",
        "CDCGEN_PASSWORD": "source-secret",
        "CDCGEN_SINK_CONTACT_POINTS": "10.1.0.1,10.1.0.2",
        "CDCGEN_SINK_USERNAME": "sink_user",
        "CDCGEN_SINK_PASSWORD_FILE": "/run/secrets/sink",
    }
    sink = PipelineConfig.from_env(sink_environment(env))
    assert sink.contact_points == ("10.1.0.1", "10.1.0.2")
    assert sink.access.username == "sink_user" and sink.access.password is None
    assert str(sink.access.password_file) == "/run/secrets/sink"
    same = PipelineConfig.from_env(sink_environment({"CDCGEN_CONTACT_POINTS": "10.0.0.1"}))
    assert same.contact_points == ("10.0.0.1",)  # no sink settings: the source cluster


def test_a_run_narrows_what_the_sink_connection_configures_never_widens_it() -> None:
    from cdcgen.airflow.replication_steps import sink_targets

    tables = "shop.orders, shop.users"
    assert sink_targets("dr, dr_test", tables, "", "") == ("dr", ["shop.orders", "shop.users"])
    assert sink_targets("dr, dr_test", tables, "dr_test", "shop.users") == (
        "dr_test", ["shop.users"],
    )  # fmt: skip
    with pytest.raises(ValueError, match="sink keyspace 'shop' is not one the connection"):
        sink_targets("dr", tables, "shop", "")  # e.g. the source's own keyspace
    with pytest.raises(ValueError, match=r"table\(s\) shop.payments are not replicated"):
        sink_targets("dr", tables, "", "shop.orders,shop.payments")
    with pytest.raises(ValueError, match="set the extras sink_keyspace and replicated_tables"):
        sink_targets("", "", "dr", "shop.orders")  # Params alone configure nothing


def test_a_keys_batches_go_in_order_one_request_at_a_time() -> None:
    from cdcgen.core.change_batch import ChangeId
    from cdcgen.ports import SinkBatch
    from cdcgen.replication.apply import Replay, key_rounds

    def replay(key: str, n: int) -> Replay:
        return Replay(key, SinkBatch(()), ChangeId(b"", "", n, 0))

    replays = [replay("a", 1), replay("b", 2), replay("a", 3), replay("a", 4), replay("c", 5)]
    rounds = key_rounds(replays, group=2)
    numbers = [[[r.change.batch_seq_no for r in req] for req in round_] for round_ in rounds]
    assert numbers == [[[1, 3], [2], [5]], [[4]]]  # "a"'s third batch waits for round two
    for round_ in rounds:  # never two requests of one key at once
        keys = [request[0].key for request in round_]
        assert len(keys) == len(set(keys))


def test_requests_pack_one_replicas_groups_within_their_bounds() -> None:
    from cdcgen.core.change_batch import ChangeId
    from cdcgen.ports import SinkBatch
    from cdcgen.replication.apply import Replay, pack_requests

    def group(key: str, replica: str, batches: int = 1, size: int = 10) -> list[Replay]:
        change = ChangeId(b"", key, 0, 0)
        return [Replay(key, SinkBatch((), replica, size), change) for _ in range(batches)]

    round_ = [group("a", "n1"), group("b", "n2"), group("c", "n1", 2), group("d", "n1"),
              group("e", "n2", size=500), group("f", "n1", batches=5)]  # fmt: skip
    packed = pack_requests(round_, batches=4, size=100)
    keys = [sorted({r.key for r in request}) for request in packed]
    assert keys == [["a", "c", "d"], ["f"], ["b"], ["e"]]  # "f" alone: over the batch bound
    assert all(len({r.replica for r in request}) == 1 for request in packed)
    assert sorted(r.key for request in packed for r in request) == sorted(
        r.key for g in round_ for r in g
    )


def test_the_bootstrap_task_skips_a_table_planned_without_one_and_never_retries_a_refusal(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from airflow.sdk.exceptions import (
        AirflowException,
        AirflowFailException,
        AirflowSkipException,
    )

    from cdcgen.airflow.spark_submit import CdcSparkSubmitOperator, ReplicationBootstrapOperator
    from cdcgen.core.errors import ExitCode

    def submit_ending(code: int) -> object:
        def submit(self: object, *args: object) -> None:
            raise AirflowException(f"Cannot execute: spark-submit ... Error code is: {code}.")

        return submit

    skipped = ReplicationBootstrapOperator(task_id="skipped", application="job.py")
    with pytest.raises(AirflowSkipException):
        skipped.execute({})
    task = ReplicationBootstrapOperator(
        task_id="bootstrap", application="job.py", application_args=["--table", "ks.t"]
    )
    monkeypatch.setattr(CdcSparkSubmitOperator, "_submit", submit_ending(ExitCode.TERMINAL))
    with pytest.raises(AirflowFailException, match="refused"):  # terminal: no retry
        task.execute({})
    monkeypatch.setattr(CdcSparkSubmitOperator, "_submit", submit_ending(ExitCode.TRANSIENT))
    with pytest.raises(AirflowException) as stopped:  # transient: the retry resumes
        task.execute({})
    assert not isinstance(stopped.value, AirflowFailException)


def test_a_failed_copy_job_stays_terminal_when_refused_and_is_resumable_otherwise() -> None:
    from cdcgen.core.cdc_log import TableRef
    from cdcgen.core.errors import CopyIncomplete, ReplicationError
    from cdcgen.core.operations.table import TableShape
    from cdcgen.replication.spark_copy import CopyTarget, task_failure

    target = CopyTarget(
        None, None, TableRef("shop", "orders"), TableRef("dr", "orders"),  # type: ignore[arg-type]
        TableShape("dr", "orders", ("pk",)), page_rows=10, concurrency=1,
    )  # fmt: skip
    refused = Exception(
        "Job aborted ... PythonException:\n  Traceback (most recent call last):\n"
        '  File "spark_copy.py", line 9, in _refused\n'
        "cdcgen.core.errors.ReplicationError: dr.orders: a copied row was refused: "
        "the sink refused it: Invalid\n\tat org.apache.spark..."
    )
    failure = task_failure(refused, target)
    assert isinstance(failure, ReplicationError)
    assert str(failure) == "dr.orders: a copied row was refused: the sink refused it: Invalid"
    lost = task_failure(Exception("Job aborted: executor lost\nConnection reset"), target)
    assert isinstance(lost, CopyIncomplete)
    assert "Connection reset" in str(lost) and "resumes" in str(lost)


def test_a_slice_is_cut_by_partition_key_each_part_in_time_order() -> None:
    from cdcgen.replication.spark_apply import key_buckets

    pks = [3, 1, 3, 2, 1, 3, 4, 2]
    changes = pa.table({"pk": pks, "ck": [0, 0, 1, 0, 1, 2, 0, 1], "order": range(len(pks))})
    buckets = key_buckets(changes, ("pk",), 3)
    assert len(buckets) == 3
    assert sorted(o for b in buckets for o in b.column("order").to_pylist()) == list(range(8))
    homes = {}
    for number, bucket in enumerate(buckets):
        order = bucket.column("order").to_pylist()
        assert order == sorted(order)  # the slice's order kept
        for pk in bucket.column("pk").to_pylist():
            assert homes.setdefault(pk, number) == number  # a key's rows in one part


def test_the_outcomes_of_spark_tasks_add_up_keeping_the_first_rejects() -> None:
    from collections import Counter

    from cdcgen.core.replication_record import RejectedEntry
    from cdcgen.replication.apply import REJECTS_KEPT, ApplyOutcome

    def rejected(reason: str) -> RejectedEntry:
        return RejectedEntry(write_time="", cdc_time="", stream_id="", reason=reason)

    total = ApplyOutcome(slices=2, largest_slice=7)
    for task in range(3):
        rejects = [rejected(f"{task}-{n}") for n in range(60)]
        total.add(ApplyOutcome(
            log_rows=10, peer_rows=1, batches=4, requests=2,
            operations=Counter(insert=6, update=4), rejected=rejects, rejected_count=70,
        ))  # fmt: skip
    assert (total.log_rows, total.peer_rows, total.batches, total.requests) == (30, 3, 12, 6)
    assert total.operations == Counter(insert=18, update=12)
    assert (total.slices, total.largest_slice) == (2, 7)
    assert total.rejected_count == 210 and len(total.rejected) == REJECTS_KEPT
    assert total.rejected[0].reason == "0-0" and total.rejected[-1].reason == "1-39"


def test_a_failed_apply_job_stays_terminal_when_refused_and_is_retried_otherwise() -> None:
    from cdcgen.core.errors import ApplyIncomplete, ReplicationError
    from cdcgen.replication.spark_apply import task_failure

    refused = Exception(
        "Job aborted ... PythonException:\n  Traceback (most recent call last):\n"
        "cdcgen.core.errors.ReplicationError: dr.orders: not writable\n\tat org..."
    )
    failure = task_failure(refused, "apply shop.orders")
    assert isinstance(failure, ReplicationError) and str(failure) == "dr.orders: not writable"
    lost = task_failure(Exception("Job aborted: executor lost\nConnection reset"), "apply x")
    assert isinstance(lost, ApplyIncomplete)
    assert "Connection reset" in str(lost) and "applies it again" in str(lost)
