"""The torture test: a seeded random world through the real pipeline, checked at each step.

A hypothesis state machine (:class:`Torture`) draws a CDC table (partition keys of
several types, zero to two clustering columns, static columns, native types, frozen and
non-frozen sets, maps and user types, tuples), emulates a raft cluster around it on the
real Cassandra, bootstraps a sink from a snapshot, then takes random steps:

* writes: the emulator's mix of inserts, updates, nulls, row, partition and range
  deletes, collection element operations, with and without a TTL, on few keys;
* schema changes: ``ALTER TABLE ADD`` of regular, static and collection columns,
  ``DROP`` of a data column, new CDC options (TTL, pre- and postimage);
* a node joining: a new vnode generation about a second later, written across (in a
  tablets world, a node and no new streams); a node leaving (decommissioned): no new
  generation, the other nodes coordinate the writes;
* tablets splitting in two or merging in pairs (a tablets world: its table's stream set
  is drawn, one to four tablets at first): a new stream set about a second later, every
  stream new, written across;
* a changes run (the code the Spark job runs, on local Spark): then the lake equals a
  raw scan of the log row for row, value for value, and each row logged after a column
  was dropped holds null in it;
* a replication run after a changes run: then the sink equals the source row for row,
  write times included, static columns partition for partition
  (:func:`assert_sink_follows`);
* a killed changes run: a read task's worker dies after a few streams, or the driver
  after a few checkpointed jobs; the next run resumes, and the lake equals the log,
  each row once;
* a killed replication run: it dies after a few acknowledged chunks, before its slice's
  progress is saved; the next run applies the slice again, and the sink equals the
  source;
* a generations run (detect, extract, validate, publish), maybe with its publisher
  killed among a generation's stream rows or before its timestamp row (then every
  generation a consumer sees is whole, and the next run completes it): the description
  tables then hold exactly the emulated cluster's generations, stream for stream;
* a pause: a changes run as if the DAG had been paused until just before the CDC TTL
  (the lake then equals the log) or past it (the run fails with :class:`DataExpired`,
  naming what is lost and how to re-bootstrap, and neither the lake nor the checkpoints
  move). The run's clock is moved, not the log's: the rows a real pause would lose are
  still there for the runs after it.

Each example ends with a changes run and a replication run and both checks, and in a
vnodes world a generations run and its check. A failure
prints the seed and the steps hypothesis shrank it to, as code to paste into a
regression test. ``make test`` runs a small budget with a fixed seed;
``make torture BUDGET=N STEPS=K SEED=S`` runs ``N`` examples of up to ``K`` steps (a
random seed unless given); ``REPRODUCE=<blob>`` runs again the one example a failure's
``@reproduce_failure`` line names.

Not drawn yet: non-frozen lists (replication refuses them by name before copying,
``test_replication_shapes.py``); the publication of a tablets world's stream sets
(``test_publisher.py``).
"""

from __future__ import annotations

import functools
import itertools
import os
import random
import time
from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, ClassVar, Literal

import pytest
from changes_fakes import (
    InjectedFault,
    ship_to_spark_workers,
)
from hypothesis import HealthCheck, __version__, reproduce_failure, seed, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    precondition,
    rule,
    run_state_machine_as_test,
)
from lake_forms import scan_log
from replication_world import (
    COPY,
    DDL_TIMEOUT,
    LEEWAY,
    create_sink_table,
    extract,
    fresh_cluster,
    settle,
    world_config,
)
from torture_world import (
    Resources,
    World,
    assert_lake_equals_log,
    assert_published_as_emulated,
    assert_sink_follows,
    assert_visible_generations_whole,
    changes_run,
    generations_run,
    lake_version,
    wait_until,
)

from cdcgen.adapters.checkpoints import CqlCheckpointStore
from cdcgen.adapters.cql import connect
from cdcgen.core.cdc_log import TableRef
from cdcgen.core.errors import DataExpired, ReplicationError
from cdcgen.core.generation import SourceMode
from cdcgen.core.log_ttls import unextracted_ttl
from cdcgen.replication.cql_ports import cql_ports
from cdcgen.replication.replication_run import (
    Mode,
    Replication,
    ReplicationRequest,
    bootstrap_sink,
    replicate,
)
from cdcgen.replication.settings import ReplicationSettings
from cdcgen.spark_runtime.session import JobKind, job_session
from cdcgen_dev.emulator import (
    WorkloadSpec,
    create_cdc_table,
    orders_table,
    run_workload,
)
from cdcgen_dev.emulator.log_rows import Operation
from cdcgen_dev.emulator.log_schema import (
    BaseTableSpec,
    Column,
    Field,
    UserType,
    base_table_cql,
    user_type_cql,
)
from cdcgen_dev.emulator.schema_changes import (
    AddColumn,
    CdcOptions,
    DropColumn,
    alter_cdc_table,
    droppable_here,
)
from cdcgen_dev.emulator.tablets import resize_tablets, tablet_stream_sets

pytestmark = pytest.mark.integration

PREFIX = "t_torture_"
KEYSPACE = f"{PREFIX}ks"
SINK_KEYSPACE = f"{PREFIX}sink"
#: Each example's table has a name of its own: a client's prepared statements for an
#: earlier example's table of the same name would bind its column types.
EXAMPLE_NUMBERS = itertools.count()

#: ``make test``'s budget; ``make torture`` sets these from BUDGET, STEPS and SEED. The
#: first example hypothesis runs is its simplest (a changes run at every step): the
#: second is the first drawn at random.
EXAMPLES = int(os.environ.get("CDCGEN_TORTURE_EXAMPLES", "2"))
STEPS = int(os.environ.get("CDCGEN_TORTURE_STEPS", "6"))
#: ``make test``'s seed is fixed, so that its run is the same every time; ``random``
#: draws one (printed, with the steps of a failure).
_SEED = os.environ.get("CDCGEN_TORTURE_SEED", "") or "1"
SEED = random.SystemRandom().randrange(1 << 32) if _SEED == "random" else int(_SEED)
#: The blob of a failure's ``@reproduce_failure`` line: that one example is run again.
REPRODUCE = os.environ.get("CDCGEN_TORTURE_REPRODUCE", "")
#: At most this many nodes join after the first (each a new generation).
MAX_JOINS = 3
#: A tablets world's table never grows past this many tablets.
MAX_TABLETS = 16
#: A killed apply's settings: slices and chunks of a few rows, so that it dies part-way.
SMALL_SLICES = ReplicationSettings(slice_rows=40, chunk_rows=10)

POINT = UserType("point", (Field("x", "double"), Field("y", "double")))
PARTITION_KEY_TYPES = ("int", "bigint", "smallint", "text", "uuid", "timeuuid", "blob")
CLUSTERING_KEY_TYPES = ("int", "bigint", "text", "blob")
NATIVE_TYPES = (
    "ascii", "bigint", "blob", "boolean", "date", "decimal", "double", "duration", "float",
    "inet", "int", "smallint", "text", "time", "timestamp", "timeuuid", "tinyint", "uuid",
    "varint",
)  # fmt: skip
SHAPED_TYPES = (
    "set<int>",
    "set<text>",
    "map<text, int>",
    "map<int, frozen<point>>",
    "point",
    "frozen<point>",
    "frozen<list<int>>",
    "frozen<set<text>>",
    "frozen<map<int, text>>",
    "tuple<int, text>",
    "tuple<int, frozen<point>>",
)
DATA_TYPES = NATIVE_TYPES + SHAPED_TYPES


@st.composite
def table_specs(draw: st.DrawFn) -> BaseTableSpec:
    """A CDC table of random keys and columns (the user type ``point`` always exists)."""
    partition = draw(st.lists(st.sampled_from(PARTITION_KEY_TYPES), min_size=1, max_size=2))
    clustering = draw(st.lists(st.sampled_from(CLUSTERING_KEY_TYPES), min_size=0, max_size=2))
    regular = draw(st.lists(st.sampled_from(DATA_TYPES), min_size=1, max_size=5))
    statics = draw(st.lists(st.sampled_from(DATA_TYPES), max_size=2)) if clustering else []
    return BaseTableSpec(
        keyspace=KEYSPACE,
        table=f"world{next(EXAMPLE_NUMBERS)}",
        partition_key=tuple(Column(f"pk{n}", kind) for n, kind in enumerate(partition)),
        clustering_key=tuple(Column(f"ck{n}", kind) for n, kind in enumerate(clustering)),
        columns=(
            *(Column(f"s{n}", kind, static=True) for n, kind in enumerate(statics)),
            *(Column(f"c{n}", kind) for n, kind in enumerate(regular)),
        ),
        cdc_ttl=86400,
        user_types=(POINT,),
    )


def step(method: Callable[..., None]) -> Callable[..., None]:
    """A rule's body, recorded as done only once it returned."""

    @functools.wraps(method)
    def run(self: Any, **kwargs: Any) -> None:
        self.steps_done = False
        self.taken.append(method.__name__)
        method(self, **kwargs)
        self.steps_done = True

    return run


class Torture(RuleBasedStateMachine):
    resources: ClassVar[Resources]

    def __init__(self) -> None:
        super().__init__()
        self.world: World | None = None
        #: False from the start of a step until it ends well: a failed example is not
        #: checked again at its teardown (the step's own error is the one to report).
        self.steps_done = False
        #: The rules this example took, in order (printed at its end).
        self.taken: list[str] = []

    # --- the world ---------------------------------------------------------------------

    @initialize(
        spec=table_specs(),
        cluster_seed=st.integers(0, 1 << 16),
        tablets=st.sampled_from([None, None, 1, 2, 4]),
    )
    def create_world(self, spec: BaseTableSpec, cluster_seed: int, tablets: int | None) -> None:
        res = self.resources
        client = res.client
        mode = SourceMode.RAFT if tablets is None else SourceMode.TABLETS
        keyspaces = [KEYSPACE, SINK_KEYSPACE, f"{PREFIX}state"]
        cluster = fresh_cluster(client, PREFIX, keyspaces, seed=cluster_seed, mode=mode)
        create_cdc_table(cluster, spec, tablets=tablets, seed=cluster_seed)
        table = TableRef(KEYSPACE, spec.table)
        client.session.execute(
            f"CREATE KEYSPACE {SINK_KEYSPACE} WITH replication = "
            "{'class': 'SimpleStrategy', 'replication_factor': 1}",
            timeout=DDL_TIMEOUT,
        )
        sink = replace(spec, keyspace=SINK_KEYSPACE)
        for cql in (*user_type_cql(sink), base_table_cql(sink)):
            client.session.execute(cql, timeout=DDL_TIMEOUT)
        lake = res.lakes / f"lake-{time.monotonic_ns()}"
        config = world_config(PREFIX, res.contact_points, lake)
        if tablets is None:
            first = max(g.timestamp for g in cluster.generations())
        else:  # the table's own streams, which the changes runs are told to read
            first = tablet_stream_sets(cluster, KEYSPACE, spec.table)[-1].timestamp
            extra = {**config.extra, "cdc_tables": table.qualified}
            config = config.with_overrides(source_mode=mode, extra=extra)
        wait_until(first + LEEWAY)  # writes before it operates are refused, as on ScyllaDB
        self.world = World(
            cluster, config, spec, table, TableRef(SINK_KEYSPACE, spec.table),
            extracted_until=datetime.now(UTC), tablets=tablets,
            ttl_changes=[(datetime.now(UTC) - timedelta(hours=1), spec.cdc_ttl)],
        )  # fmt: skip
        self.write_for_a_second(cluster_seed, ttl=None, keys=8)
        self.extract_and_check()  # a bootstrap needs the lake to hold the changes first
        job = Replication(table, self.world.sink)
        booting = ReplicationRequest(job, "bootstrap", Mode.BOOTSTRAP)
        booted = bootstrap_sink(config, cql_ports(config, client, client, COPY), booting)
        assert booted.consistent_until is not None, booted
        self.steps_done = True

    def teardown(self) -> None:
        if self.world is not None and self.steps_done:  # every example ends with both checks
            self.replicate_and_check()
            world = self.world
            if world.tablets is None:  # a tablets world's stream sets: test_publisher.py
                generations_run(self.resources.client, world)
                assert_published_as_emulated(self.resources.client, world)
            kind = "vnodes" if world.tablets is None else f"{world.tablets} tablets"
            print(f"torture: {world.spec.table} ({kind}) ended well after", ", ".join(self.taken))

    # --- the steps ---------------------------------------------------------------------

    @rule(
        writes_seed=st.integers(0, 1 << 16),
        ttl=st.sampled_from([None, 3600]),
        keys=st.sampled_from([4, 8, 30]),
    )
    @step
    def write(self, writes_seed: int, ttl: int | None, keys: int) -> None:
        self.write_for_a_second(writes_seed, ttl, keys)

    @rule(kind=st.sampled_from(DATA_TYPES), static=st.booleans())
    @step
    def add_column(self, kind: str, static: bool) -> None:
        world = self.live()
        static = static and bool(world.spec.clustering_key)
        column = Column(f"a{next(world.added)}", kind, static=static)
        self.alter(AddColumn(column))

    @precondition(lambda self: self.world is not None and droppable(self.world.spec))
    @rule(data=st.data())
    @step
    def drop_column(self, data: st.DataObject) -> None:
        world = self.live()
        name = data.draw(st.sampled_from(droppable(world.spec)), label="column")
        log, _ = scan_log(self.resources.client, world.table)
        world.before_drop[name] = set(log)
        self.alter(DropColumn(name))

    @rule(ttl=st.sampled_from([None, 3600, 86400]), preimage=st.booleans(), postimage=st.booleans())
    @step
    def change_cdc_options(self, ttl: int | None, preimage: bool, postimage: bool) -> None:
        self.alter(CdcOptions(ttl=ttl, preimage=preimage, postimage=postimage))

    @precondition(lambda self: self.world is not None and self.world.joins < MAX_JOINS)
    @rule(node_seed=st.integers(0, 1 << 16), shards=st.integers(1, 3))
    @step
    def join_node(self, node_seed: int, shards: int) -> None:
        """A node joins: a new generation soon, which the next writes cross into (in a
        tablets world the table's streams stay: no cluster-wide generation)."""
        world = self.live()
        mode = SourceMode.RAFT if world.tablets is None else SourceMode.TABLETS
        joined = world.cluster.join_node(mode, shards=shards, vnodes=4, seed=node_seed)
        assert (joined.generation is None) == (world.tablets is not None)
        world.joins += 1

    @precondition(lambda self: self.world is not None and self.world.joins > self.world.leaves)
    @rule(data=st.data())
    @step
    def leave_node(self, data: st.DataObject) -> None:
        """A node is decommissioned: ScyllaDB makes no generation for it, the operating
        one (or the table's stream set) goes on, and the other nodes coordinate."""
        world = self.live()
        mode = SourceMode.RAFT if world.tablets is None else SourceMode.TABLETS
        generations = world.cluster.generations()
        names = [node.name for node in world.cluster.nodes()]
        world.cluster.leave_node(data.draw(st.sampled_from(names), label="node"), mode)
        assert world.cluster.generations() == generations
        world.leaves += 1

    @precondition(lambda self: self.world is not None and self.world.tablets is not None)
    @rule(split=st.booleans(), resize_seed=st.integers(0, 1 << 16))
    @step
    def split_or_merge_tablets(self, split: bool, resize_seed: int) -> None:
        """Every tablet splits in two, or pairs merge: a new stream set soon, every
        stream new, which the next writes cross into."""
        world = self.live()
        assert world.tablets is not None
        if world.tablets == 1:
            split = True
        elif world.tablets >= MAX_TABLETS:
            split = False
        resize_tablets(world.cluster, KEYSPACE, world.spec.table, split=split, seed=resize_seed)
        world.tablets = world.tablets * 2 if split else world.tablets // 2

    @rule()
    @step
    def extract_changes(self) -> None:
        """A changes run up to now; the lake then equals the log, row for row."""
        self.extract_and_check()

    @rule()
    @step
    def replicate(self) -> None:
        """A changes run, then a replication run; the sink then equals the source."""
        self.replicate_and_check()

    @rule(
        where=st.sampled_from(["read task", "driver"]),
        after=st.integers(1, 3),
        writes_seed=st.integers(0, 1 << 16),
    )
    @step
    def killed_changes_run(self, where: str, after: int, writes_seed: int) -> None:
        """Writes, then a changes run killed part-way over them; the next one resumes
        from its checkpoints."""
        world = self.live()
        self.write_for_a_second(writes_seed, ttl=None, keys=8)
        end = settle()
        if where == "read task":  # its Python worker dies after ``after`` streams
            kill = functools.partial(changes_run, task_dies_after_streams=after)
        else:  # the driver dies after ``after`` checkpointed jobs, one bucket each
            kill = functools.partial(changes_run, driver_dies_after_saves=after)
        self.run_to_its_kill(lambda: kill(self.resources, world, end))
        self.extract_and_check()

    @rule(after=st.integers(1, 3), writes_seed=st.integers(0, 1 << 16))
    @step
    def killed_apply(self, after: int, writes_seed: int) -> None:
        """Writes, then a replication run over them that dies once ``after`` chunks of a
        few rows are acknowledged, before its slice's progress is saved; the next run
        applies that slice again, and the sink equals the source."""
        world = self.live()
        self.write_for_a_second(writes_seed, ttl=None, keys=8)
        self.extract_and_check()
        client = self.resources.client
        acknowledged = itertools.count(1)

        def dies(rows: object) -> None:
            if next(acknowledged) >= after:
                raise InjectedFault("injected fault: the apply died after acknowledged chunks")

        job = Replication(world.table, world.sink)
        self.run_to_its_kill(
            lambda: replicate(
                world.config,
                cql_ports(world.config, client, client, SMALL_SLICES, on_applied=dies),
                ReplicationRequest(job, "killed"),
            )
        )
        self.replicate_and_check()

    @precondition(lambda self: self.world is not None and self.world.tablets is None)
    @rule(dies=st.sampled_from([None, "streams", "timestamp"]))
    @step
    def publish_generations(self, dies: Literal["streams", "timestamp"] | None) -> None:
        """A generations run (detect, extract, validate, publish), or one whose publisher
        dies half-way through a generation's stream rows or before its timestamp row:
        consumers then see no generation in part, and the next run completes it. The
        description tables then hold exactly the emulated cluster's generations."""
        world = self.live()
        if dies is not None:
            self.run_to_its_kill(lambda: generations_run(self.resources.client, world, dies=dies))
            assert_visible_generations_whole(self.resources.client, world)
        outcome = generations_run(self.resources.client, world)
        assert not outcome.held_back, outcome
        assert_published_as_emulated(self.resources.client, world)

    @rule(past_ttl=st.booleans())
    @step
    def pause(self, past_ttl: bool) -> None:
        """A changes run after a pause to just before the TTL the runs go by, or past
        the shortest TTL of a row not extracted yet (the run's clock moves on; the log
        keeps its rows)."""
        world = self.live()
        store = CqlCheckpointStore(self.resources.client, world.config.checkpoint_keyspace)
        if not past_ttl:  # the backlog since the last run, read as if that late
            state = store.table_state(world.table)
            current = timedelta(seconds=world.spec.cdc_ttl) if world.spec.cdc_ttl else None
            bound = unextracted_ttl(current, state.log_ttls, state.watermark)
            self.extract_and_check(None if bound is None else world.extracted_until + bound * 0.9)
            return
        end = settle()
        shortest_ttl = world.shortest_ttl_since(world.extracted_until)
        if not shortest_ttl:
            return  # no row expires: no pause is too long
        lake_before = lake_version(world)
        checkpoints_before = store.checkpoints(world.table)
        now = world.extracted_until + timedelta(seconds=shortest_ttl, hours=1)
        with pytest.raises(DataExpired, match=r"has expired.*(?i:re-bootstrap)"):
            changes_run(self.resources, world, end, now=now)
        assert lake_version(world) == lake_before
        assert store.checkpoints(world.table) == checkpoints_before

    # --- the checks --------------------------------------------------------------------

    def check_lake(self) -> None:
        world = self.live()
        assert_lake_equals_log(self.resources.client, world.config, world.table, world.before_drop)

    # --- what the steps do ------------------------------------------------------------

    def run_to_its_kill(self, run: Callable[[], object]) -> None:
        """A run an injected fault may kill (raised as is, or wrapped by Spark), marked
        in the printed list of steps: a kill only happens where there is work."""
        try:
            run()
        except Exception as error:
            if "injected fault" not in str(error):
                raise
            self.taken[-1] += " (killed)"
        else:
            self.taken[-1] += " (nothing to kill)"

    def live(self) -> World:
        assert self.world is not None
        return self.world

    def write_for_a_second(self, writes_seed: int, ttl: int | None, keys: int) -> None:
        spec = WorkloadSpec(
            KEYSPACE, self.live().spec.table, rate=80, duration=timedelta(seconds=1), keys=keys,
            seed=writes_seed, base_ttl=ttl, max_rows_per_write=2,
        )  # fmt: skip
        report = run_workload(self.live().cluster, spec)
        assert report.writes and not report.failed and not report.rejected, report.to_json()

    def alter(self, change: AddColumn | DropColumn | CdcOptions) -> None:
        world = self.live()
        world.spec = alter_cdc_table(world.cluster, KEYSPACE, world.spec.table, change)
        if isinstance(change, CdcOptions) and change.ttl is not None:
            world.ttl_changes.append((datetime.now(UTC), change.ttl))

    def extract_and_check(self, now: datetime | None = None) -> None:
        """A changes run up to now (as if at ``now``); the lake then equals the log."""
        world = self.live()
        end = settle()
        result = changes_run(self.resources, world, end, now=now)
        assert result.watermark is not None, result
        world.extracted_until = end
        self.check_lake()

    def replicate_and_check(self) -> None:
        self.extract_and_check()
        world = self.live()
        client = self.resources.client
        job = Replication(world.table, world.sink)
        record = replicate(
            world.config, cql_ports(world.config, client, client), ReplicationRequest(job, "apply")
        )
        assert record.status == "ok" and not record.rejected, record
        assert_sink_follows(client, world.table, world.sink)


def droppable(spec: BaseTableSpec) -> list[str]:
    """Columns a DROP may take: a regular one only while another stays, and none the
    sandbox's Cassandra refuses to drop (a non-frozen user type, which ScyllaDB drops)."""
    regular = [c.name for c in spec.columns if not c.static]
    return sorted(
        c.name for c in spec.columns if (c.static or len(regular) > 1) and droppable_here(c)
    )


def test_a_random_world_through_the_pipeline(
    contact_points: tuple[str, ...], tmp_path_factory: pytest.TempPathFactory
) -> None:
    client = connect(contact_points)
    ship_to_spark_workers()  # the fault wrappers run inside Spark tasks
    Torture.resources = Resources(
        client,
        job_session(JobKind.CHANGES_EXTRACT, "cdcgen-torture"),
        tuple(contact_points),
        tmp_path_factory.mktemp("torture"),
    )
    print(f"torture: seed {SEED}, {EXAMPLES} example(s) of up to {STEPS} steps")
    machine = seed(SEED)(Torture)
    if REPRODUCE:
        machine = reproduce_failure(__version__, REPRODUCE.encode())(machine)
    try:
        run_state_machine_as_test(
            machine,
            settings=settings(
                max_examples=EXAMPLES,
                stateful_step_count=STEPS,
                deadline=None,
                database=None,
                print_blob=True,
                suppress_health_check=list(HealthCheck),
            ),
        )
    finally:
        client.close()


def test_a_bootstrap_before_any_changes_run_names_the_dag_to_run(
    contact_points: tuple[str, ...], tmp_path: Path
) -> None:
    """Found by the torture test (seed 1): with no changes run yet, so no state keyspace,
    a bootstrap failed on the missing keyspace instead of saying what to run first."""
    prefix = "t_tortfirst_"
    source, sink = TableRef(f"{prefix}ks", "orders"), TableRef(f"{prefix}sink", "orders")
    client = connect(contact_points)
    try:
        keyspaces = [source.keyspace, sink.keyspace, f"{prefix}state"]
        cluster = fresh_cluster(client, prefix, keyspaces, seed=5)
        create_cdc_table(cluster, orders_table(source.keyspace))
        create_sink_table(client, sink)
        config = world_config(prefix, contact_points, tmp_path / "lake")
        booting = ReplicationRequest(Replication(source, sink), "bootstrap", Mode.BOOTSTRAP)
        with pytest.raises(ReplicationError, match=r"lake holds its changes none yet.*cdc_changes"):
            bootstrap_sink(config, cql_ports(config, client, client), booting)
    finally:
        client.close()


def test_a_row_whose_values_were_all_in_a_dropped_column_stays_on_the_sink(
    contact_points: tuple[str, ...], tmp_path: Path
) -> None:
    """Found by the torture test (seed 4153993561, 3 examples of up to 8 steps): an
    ``UPDATE`` writes no row marker, so a row whose values were all in a column dropped
    since is gone from the source, and stays on the sink, which keeps the column. Its
    partition's static values show in it: the sink check compared them per row and took
    the row for a difference. It now compares statics per partition, and still sees a
    static value that differs."""
    prefix = "t_tortdrop_"
    source, sink = TableRef(f"{prefix}ks", "rows"), TableRef(f"{prefix}sink", "rows")
    spec = BaseTableSpec(
        keyspace=source.keyspace,
        table=source.table,
        partition_key=(Column("pk", "int"),),
        clustering_key=(Column("ck", "int"),),
        columns=(Column("s", "text", static=True), Column("c0", "int"), Column("c1", "int")),
    )
    client = connect(contact_points)
    try:
        keyspaces = [source.keyspace, sink.keyspace, f"{prefix}state"]
        cluster = fresh_cluster(client, prefix, keyspaces, seed=17)
        create_cdc_table(cluster, spec)
        client.session.execute(
            f"CREATE KEYSPACE {sink.keyspace} WITH replication = "
            "{'class': 'SimpleStrategy', 'replication_factor': 1}",
            timeout=DDL_TIMEOUT,
        )
        client.session.execute(base_table_cql(replace(spec, keyspace=sink.keyspace)))
        wait_until(max(g.timestamp for g in cluster.generations()) + LEEWAY)
        config = world_config(prefix, contact_points, tmp_path / "lake")
        spark = job_session(JobKind.CHANGES_EXTRACT, "cdcgen-torture")
        job = Replication(source, sink)

        def write(operation: Operation) -> None:
            writes = WorkloadSpec(
                source.keyspace, source.table, rate=30, duration=timedelta(seconds=1),
                keys=30, seed=3, mix={operation: 1.0},
            )  # fmt: skip
            assert run_workload(cluster, writes).writes

        # A bootstrap's copy writes row markers: it copies an empty table (the first
        # changes delete partitions), so that every row on the sink is an UPDATE's.
        start = datetime.now(UTC)
        write(Operation.PARTITION_DELETE)
        end = settle()
        extract(spark, config, source, start, end)
        booting = ReplicationRequest(job, "bootstrap", Mode.BOOTSTRAP)
        bootstrap_sink(config, cql_ports(config, client, client, COPY), booting)
        write(Operation.UPDATE)

        def apply(run_id: str) -> None:
            record = replicate(
                config, cql_ports(config, client, client), ReplicationRequest(job, run_id)
            )
            assert record.status == "ok" and not record.rejected, record

        # Replicated before the drop: the log loses a dropped column with its values.
        start, end = end, settle()
        assert extract(spark, config, source, start, end) > 0
        apply("before-drop")
        alter_cdc_table(cluster, source.keyspace, source.table, DropColumn("c0"))
        extract(spark, config, source, end, settle())
        apply("after-drop")

        kept = client.session.execute(f"SELECT pk, ck, s, c0, c1 FROM {sink.qualified}")
        shown = {
            (r.pk, r.ck) for r in client.session.execute(f"SELECT pk, ck FROM {source.qualified}")
        }
        only_dropped = [r for r in kept if (r.pk, r.ck) not in shown]
        assert only_dropped and all(r.c0 is not None and r.c1 is None for r in only_dropped)
        assert any(r.s is not None for r in only_dropped), "no static value shows in them"
        assert_sink_follows(client, source, sink)

        row = only_dropped[0]
        client.session.execute(f"UPDATE {sink.qualified} SET s = 'other' WHERE pk = %s", (row.pk,))
        with pytest.raises(AssertionError, match="'other'"):
            assert_sink_follows(client, source, sink)
    finally:
        client.close()
