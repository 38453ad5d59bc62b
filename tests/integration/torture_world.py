"""What a torture world is, the runs its steps make and the checks they end with.

:mod:`test_torture` draws the steps; this module runs them the way the DAG tasks do
(a changes run, a generations run, both maybe killed part-way) and compares what they
left with the truth: the sink with the source, the description tables with the
emulated cluster's generations.
"""

from __future__ import annotations

import itertools
import time
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from changes_fakes import CheckpointsFailingAfter, InjectedFault, ReadersFailingAfter
from lake_forms import LogKey, lake_form, scan_log
from replication_world import LEEWAY, SETTINGS, assert_sink_matches

from cdcgen.adapters.cql import CqlClient
from cdcgen.adapters.delta_tables import table_version
from cdcgen.adapters.generation_sources import VnodePublication, generation_ports
from cdcgen.adapters.log_tables import describe_log_table
from cdcgen.adapters.publisher import CqlDescriptionPublisher
from cdcgen.adapters.table_schemas import CqlTableSchemas
from cdcgen.changes.changes_run import ChangesRequest, extract_changes
from cdcgen.changes.job import reader_factory, table_adapters
from cdcgen.changes.layout import read_delta, table_root
from cdcgen.changes.result import ExtractionRun
from cdcgen.config import PipelineConfig
from cdcgen.core.cdc_log import BATCH_SEQ_NO, STREAM_ID, TIME, TableRef
from cdcgen.core.cql_types import ParsedType
from cdcgen.core.identifiers import quote
from cdcgen.core.log_ttls import shortest
from cdcgen.core.windows import Interval, Mode
from cdcgen.generation_lake.lake_tables import LocalGenerationLake
from cdcgen.generation_lake.ring_records import LakeRingRecords
from cdcgen.jobs.extract_generation import arguments
from cdcgen.jobs.extract_generation import run as extract_generation
from cdcgen.pipeline.detect import detect
from cdcgen.pipeline.publish import PublicationOutcome, publish_in_order
from cdcgen.pipeline.validate import validate
from cdcgen_dev.emulator import SandboxCluster
from cdcgen_dev.emulator.log_schema import BaseTableSpec


@dataclass
class Resources:
    """What every example shares: the CQL client, local Spark, a folder for lakes."""

    client: CqlClient
    spark: Any
    contact_points: tuple[str, ...]
    lakes: Path


@dataclass
class World:
    """One example's emulated cluster, table, sink and what the steps have done."""

    cluster: SandboxCluster
    config: PipelineConfig
    spec: BaseTableSpec
    table: TableRef
    sink: TableRef
    extracted_until: datetime
    #: The table's tablet count in a tablets world; None: a vnodes keyspace.
    tablets: int | None = None
    joins: int = 0
    leaves: int = 0
    added: itertools.count[int] = field(default_factory=itertools.count)
    #: Log keys that existed when each dropped column was dropped.
    before_drop: dict[str, set[LogKey]] = field(default_factory=dict)
    #: Each CDC TTL (seconds, 0: none) the table had, from when: a log row keeps the one
    #: in effect when it was logged.
    ttl_changes: list[tuple[datetime, int]] = field(default_factory=list)

    def shortest_ttl_since(self, moment: datetime) -> int:
        """The shortest TTL a row logged after ``moment`` carries (0: none expires)."""
        in_effect = [ttl for at, ttl in self.ttl_changes if at <= moment][-1:]
        return shortest(*in_effect, *(ttl for at, ttl in self.ttl_changes if at > moment))


def changes_run(
    resources: Resources,
    world: World,
    end: datetime,
    *,
    now: datetime | None = None,
    task_dies_after_streams: int | None = None,
    driver_dies_after_saves: int | None = None,
) -> ExtractionRun:
    """An incremental changes run from where the world's extraction got to, as the Spark
    job builds it: as if at ``now``, or killed at the given point."""
    client = resources.client
    settings = SETTINGS
    readers = None
    if task_dies_after_streams is not None:
        log_table = describe_log_table(
            client, world.table, world.config.source_schema, settings.log_partitioner
        )
        readers = ReadersFailingAfter(
            reader_factory(world.config, settings, log_table), task_dies_after_streams
        )
    if driver_dies_after_saves is not None:
        settings = settings.with_overrides(buckets_per_job=1)
    built = table_adapters(
        client, resources.spark, world.config, settings, world.table, readers=readers
    )
    ports = built.ports(validate=False)
    if driver_dies_after_saves is not None:
        ports = replace(
            ports, checkpoints=CheckpointsFailingAfter(ports.checkpoints, driver_dies_after_saves)
        )
    request = ChangesRequest(world.table, Interval(world.extracted_until, end), Mode.INCREMENTAL)
    return extract_changes(
        request, ports, world.config, settings, cdc_ttl=built.log_table.ttl, now=now
    )


class DyingPublisher(CqlDescriptionPublisher):
    """A publisher process that dies half-way through a generation's stream rows, or
    once they are all written, before the timestamp row that makes it visible."""

    def __init__(
        self, client: CqlClient, config: PipelineConfig, dies: Literal["streams", "timestamp"]
    ) -> None:
        super().__init__(client, config)
        self.dies = dies

    def _write_stream_batches(self, when: datetime, rows: Any) -> None:
        if self.dies == "streams":
            super()._write_stream_batches(when, rows[: len(rows) // 2])
            raise InjectedFault("injected fault: the publisher died among the stream rows")
        super()._write_stream_batches(when, rows)

    def write_timestamp(self, timestamp: datetime) -> None:
        raise InjectedFault("injected fault: the publisher died before the timestamp row")


def generations_run(
    client: CqlClient, world: World, *, dies: Literal["streams", "timestamp"] | None = None
) -> PublicationOutcome:
    """A run of the generations DAG's tasks, in process, once every committed generation
    has started on every node (the DAG's wait): detect (recording the live ring with the
    newest generation at first sight), extract with the Spark job, validate with the GX
    suites (a rejected generation fails the step), publish in order; with ``dies``, by
    a :class:`DyingPublisher`."""
    config = world.config
    committed = [g.timestamp for g in world.cluster.generations() if g.committed]
    wait_until(max(committed) + LEEWAY)
    ports = generation_ports(client, config)
    rings = LakeRingRecords(config.lake_path)
    chosen = [
        s.generation
        for s in detect(ports.source, ports.publisher, None, ring=ports.ring, rings=rings)
    ]
    validations = []
    for generation in chosen:
        extract_generation(arguments(generation), config)
        validations.append(validate(config, generation))
    publisher = ports.publisher
    if dies is not None:
        publisher = VnodePublication(DyingPublisher(client, config, dies))
    return publish_in_order(
        chosen,
        validations,
        source=ports.source,
        publisher=publisher,
        lake=LocalGenerationLake(config.lake_path),
        target_keyspace=config.target_keyspace,
    )


def emulated_streams(world: World) -> dict[datetime, dict[int, frozenset[bytes]]]:
    """The emulated cluster's committed generations: each range end's streams."""
    return {
        g.timestamp: {
            e.range_end: frozenset(s.raw for s in e.streams) for e in g.description().entries
        }
        for g in world.cluster.generations()
        if g.committed
    }


def assert_published_as_emulated(client: CqlClient, world: World) -> None:
    """The description tables hold exactly the emulated cluster's generations."""
    assert_visible_generations_whole(client, world)
    published = CqlDescriptionPublisher(client, world.config).published_timestamps()
    assert published == set(emulated_streams(world))


def assert_visible_generations_whole(client: CqlClient, world: World) -> None:
    """Each generation a consumer can see (its timestamp row) has every stream row."""
    published = CqlDescriptionPublisher(client, world.config)
    truth = emulated_streams(world)
    for timestamp in published.published_timestamps():
        assert published.read_streams(timestamp) == truth[timestamp], timestamp


def assert_lake_equals_log(
    client: CqlClient,
    config: PipelineConfig,
    table: TableRef,
    before_drop: Mapping[str, set[LogKey]] | None = None,
) -> None:
    """The lake's changes table equals a raw scan of the log: every log row once, value
    for value; a column dropped since (``before_drop``: the log keys that existed when
    it was) null in each row logged after the drop."""
    log, types = scan_log(client, table)
    rows = read_delta(table_root(config.lake_path, table)).to_pylist()
    keys = [(r[STREAM_ID], r[TIME], r[BATCH_SEQ_NO]) for r in rows]
    assert [k for k, n in Counter(keys).items() if n > 1] == [], "rows in the lake twice"
    assert set(keys) == set(log), (
        f"{len(set(log) - set(keys))} log row(s) not in the lake, "
        f"{len(set(keys) - set(log))} lake row(s) not in the log"
    )
    lake = dict(zip(keys, rows, strict=True))
    for key, source in log.items():
        row = lake[key]
        for name, value in source.items():
            if name != TIME:
                assert row[name] == lake_form(types[name], value), (key, name)
        for name, before in (before_drop or {}).items():
            if key not in before:  # logged after the drop: the lake's column is null
                assert row.get(name) is None, (key, name)


def lake_version(world: World) -> int | None:
    return table_version(table_root(world.config.lake_path, world.table))


def wait_until(moment: datetime) -> None:
    time.sleep(max(0.0, (moment - datetime.now(UTC)).total_seconds()))


@dataclass(frozen=True)
class Shape:
    """The source table's columns as the sink check reads them: the partition key, the
    clustering key, the static and the regular data columns, and which data columns CQL
    reads a write time of (the atomic ones)."""

    partition: list[str]
    clustering: list[str]
    static: list[str]
    regular: list[str]
    atomic: frozenset[str]


def shape_of(client: CqlClient, table: TableRef) -> Shape:
    definition = CqlTableSchemas(client).definition(table)
    assert definition is not None
    udts = definition.user_types

    def is_atomic(text: str) -> bool:
        kind = ParsedType.parse(text)
        return kind.frozen or (kind.name not in ("set", "list", "map") and kind.name not in udts)

    data = list(definition.data_columns)
    return Shape(
        list(definition.partition_key),
        list(definition.clustering_key),
        [c for c in data if c in definition.static],
        [c for c in data if c not in definition.static],
        frozenset(c for c in data if is_atomic(definition.types[c])),
    )


def assert_sink_follows(client: CqlClient, source: TableRef, sink: TableRef) -> None:
    """The sink equals the source, with write times, over the source's current columns.

    Static columns are compared per partition, the rest per row: a partition's statics
    show in each of its rows, and a row the sink keeps and the source no longer shows
    (:func:`replication_world.assert_sink_matches`: a bootstrap's row marker, or a row
    whose only values were in a column dropped since, which the sink keeps) shows them
    too."""
    shape = shape_of(client, source)
    if shape.static:
        partitions = shape.partition, shape.static
        assert_sink_matches(
            contents(client, source, *partitions, shape.atomic),
            contents(client, sink, *partitions, shape.atomic),
            len(shape.partition),
        )
    keys = [*shape.partition, *shape.clustering]
    assert_sink_matches(
        contents(client, source, keys, shape.regular, shape.atomic),
        contents(client, sink, keys, shape.regular, shape.atomic),
        len(keys),
    )


def contents(
    client: CqlClient, table: TableRef, keys: list[str], data: list[str], atomic: frozenset[str]
) -> list[tuple[Any, ...]]:
    """Each distinct value of ``keys`` in ``table``, with its ``data`` columns and the write
    time of each atomic one, as text, sorted. A row with null clustering columns, which
    CQL shows for a partition of static values only, counts as no row."""
    timed = [c for c in data if c in atomic]
    selected = [quote(c) for c in (*keys, *data)] + [f"WRITETIME({quote(c)})" for c in timed]
    rows = client.session.execute(
        f"SELECT {', '.join(selected)} FROM {quote(table.keyspace)}.{quote(table.table)}",
        timeout=60,
    )
    return sorted({tuple(repr(v) for v in row) for row in rows if None not in row[: len(keys)]})
