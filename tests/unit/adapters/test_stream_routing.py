"""Routing per-stream reads by the token inside the stream ID, not by Murmur3 of the blob."""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field
from typing import Any

import pytest
from cassandra.metadata import Murmur3Token
from cassandra.policies import HostDistance
from hypothesis import given
from hypothesis import strategies as st

from cdcgen.adapters.errors import RoutingError
from cdcgen.adapters.stream_routing import (
    ANY_REPLICA,
    log_token,
    murmur3_token,
    primary_replica,
    stream_routing_policy,
)
from cdcgen.core.cdc_log import LogPartitioner
from cdcgen.core.stream_id import StreamId
from cdcgen.spark_runtime.fanout import plan_tasks


def stream(token: int, seed: int = 0) -> StreamId:
    return StreamId.from_parts(token, 3, random.Random(seed).getrandbits(38))


def test_cdc_token_is_the_first_eight_bytes_and_murmur3_is_the_drivers() -> None:
    sid = stream(-1234567890123)
    assert log_token(sid.raw, LogPartitioner.CDC) == -1234567890123
    assert log_token(sid.raw, LogPartitioner.MURMUR3) == Murmur3Token.from_key(sid.raw).value
    assert log_token(sid.raw, LogPartitioner.MURMUR3) != sid.token
    assert murmur3_token(b"123") == -7468325962851647638  # cassandra-from-jars.md
    with pytest.raises(RoutingError):
        log_token(sid.raw, LogPartitioner.AUTO)


# --- a ring of three fake hosts, ranges (-inf, -100], (-100, 100], (100, +inf) ----------------


@dataclass(eq=False)
class FakeHost:
    address: str
    is_up: bool = True

    def __repr__(self) -> str:
        return self.address


HOSTS = [FakeHost("10.0.0.1"), FakeHost("10.0.0.2"), FakeHost("10.0.0.3")]


class FakeTokenMap:
    def get_replicas(self, keyspace: str, token: Murmur3Token) -> list[FakeHost]:
        primary = 0 if token.value <= -100 else 1 if token.value <= 100 else 2
        return [HOSTS[primary], HOSTS[(primary + 1) % 3]]  # RF=2


@dataclass
class FakeMetadata:
    token_map: FakeTokenMap | None = field(default_factory=FakeTokenMap)


class FakeCluster:
    metadata = FakeMetadata()


class FakeChild:
    def populate(self, cluster: Any, hosts: Any) -> None:
        pass

    def distance(self, host: Any) -> int:
        return HostDistance.LOCAL

    def make_query_plan(self, keyspace: Any = None, query: Any = None) -> list[FakeHost]:
        return list(HOSTS)


@dataclass
class Column:
    table_name: str


@dataclass
class Prepared:
    column_metadata: list[Column]


@dataclass
class Query:
    routing_key: bytes | None
    keyspace: str | None
    prepared_statement: Prepared


def log_query(sid: StreamId, table: str = "orders_scylla_cdc_log") -> Query:
    return Query(sid.raw, "shop", Prepared([Column(table)]))


def test_primary_replica_comes_from_the_stream_token() -> None:
    metadata: Any = FakeMetadata()
    assert primary_replica(metadata, "shop", stream(-500).raw, LogPartitioner.CDC) == "10.0.0.1"
    assert primary_replica(metadata, "shop", stream(0).raw, LogPartitioner.CDC) == "10.0.0.2"
    assert primary_replica(metadata, "shop", stream(500).raw, LogPartitioner.CDC) == "10.0.0.3"
    no_map: Any = FakeMetadata(token_map=None)
    assert primary_replica(no_map, "shop", stream(0).raw, LogPartitioner.CDC) == ANY_REPLICA


@pytest.mark.parametrize("token", [-(2**62), -100, 0, 100, 2**62])
def test_policy_puts_the_stream_tokens_replicas_first(token: int) -> None:
    policy = stream_routing_policy(LogPartitioner.CDC, FakeChild())  # type: ignore[arg-type]
    policy.populate(FakeCluster(), HOSTS)
    sid = stream(token)
    plan = list(policy.make_query_plan("shop", log_query(sid)))
    replicas = FakeTokenMap().get_replicas("shop", Murmur3Token(sid.token))
    assert plan[:2] == replicas
    assert sorted(h.address for h in plan) == sorted(h.address for h in HOSTS)  # failover kept


def test_policy_skips_down_replicas_and_leaves_other_tables_to_token_awareness() -> None:
    policy = stream_routing_policy(LogPartitioner.CDC, FakeChild())  # type: ignore[arg-type]
    policy.populate(FakeCluster(), HOSTS)
    HOSTS[1].is_up = False
    try:
        plan = list(policy.make_query_plan("shop", log_query(stream(0))))
        assert plan[0] is HOSTS[2]
    finally:
        HOSTS[1].is_up = True
    other = Query(None, "shop", Prepared([Column("orders")]))
    assert list(policy.make_query_plan("shop", other)) == HOSTS
    with pytest.raises(RoutingError):
        stream_routing_policy(LogPartitioner.AUTO)


@given(
    st.lists(st.tuples(st.integers(0, 10_000), st.sampled_from("abcd")), max_size=300),
    st.integers(1, 40),
)
def test_plan_tasks_groups_by_replica_caps_size_and_loses_nothing(
    reads: list[tuple[int, str]], cap: int
) -> None:
    tasks = plan_tasks(reads, lambda read: read[1], cap)
    flat = [read for _, chunk in tasks for read in chunk]
    assert sorted(flat) == sorted(reads)
    for replica, chunk in tasks:
        assert 0 < len(chunk) <= cap
        assert {read[1] for read in chunk} == {replica}
    # Round robin: the first tasks cover as many replicas as possible.
    replicas = {read[1] for read in reads}
    assert {replica for replica, _ in tasks[: len(replicas)]} == replicas


@given(st.integers(1, 500), st.integers(1, 16), st.integers(1, 300))
def test_plan_tasks_splits_one_replica_to_keep_every_core_busy(
    reads: int, at_least: int, cap: int
) -> None:
    tasks = plan_tasks(list(range(reads)), lambda _: "only", cap, at_least)
    per_task = min(cap, math.ceil(reads / at_least))
    assert all(len(chunk) <= per_task for _, chunk in tasks)
    assert len(tasks) == math.ceil(reads / per_task)
    if cap >= reads:  # not capped: about as many tasks as asked for
        assert len(tasks) >= min(at_least, reads) / 2
