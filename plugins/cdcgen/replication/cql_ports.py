"""A replication run's ports over cassandra-driver, the Delta lake and Spark: what the
CLI, the DAG's tasks and the jobs hand :func:`cdcgen.replication.replication_run.replicate`."""

from __future__ import annotations

from typing import TYPE_CHECKING

from cdcgen.adapters.checkpoints import CqlCheckpointStore
from cdcgen.adapters.clock_reader import ClockReaderOnDemand
from cdcgen.adapters.sink_state import CqlSinkStates
from cdcgen.adapters.sink_writes import CqlSinkWrites
from cdcgen.adapters.table_schemas import CqlTableSchemas
from cdcgen.core.errors import ReplicationError
from cdcgen.errors import ConfigError
from cdcgen.replication.apply import AppliedHook
from cdcgen.replication.change_slices import LakeChangeSlices
from cdcgen.replication.replication_run import Replication, ReplicationPorts
from cdcgen.replication.settings import ReplicationSettings
from cdcgen.replication.sink_schema import SinkShape
from cdcgen.replication.spark_apply import ApplyJob, SparkApply
from cdcgen.replication.spark_copy import SparkTableCopy, copy_target, session_key

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from cdcgen.adapters.cql import CqlClient
    from cdcgen.adapters.lake_store import LakeRoot
    from cdcgen.config import PipelineConfig


def cql_ports(
    config: PipelineConfig,
    source: CqlClient,
    sink: CqlClient,
    settings: ReplicationSettings | None = None,
    *,
    sink_config: PipelineConfig | None = None,
    spark: SparkSession | None = None,
    peer_lake: LakeRoot | None = None,
    on_applied: AppliedHook | None = None,
) -> ReplicationPorts:
    """The ports of a run of ``config``'s lake between the clusters ``source`` and
    ``sink`` are connected to; ``sink_config``: how Spark tasks reach the sink (default:
    as the source, ``config``); ``spark``: the session of the copy and of an apply on
    executors (default: the process's for the job, :func:`cdcgen.spark_runtime.session.
    job_session`); ``peer_lake``: where the sink tables' own changes are (default: this
    lake)."""
    settings = settings or ReplicationSettings()
    return ReplicationPorts(
        source=CqlTableSchemas(source),
        sink=CqlTableSchemas(sink),
        writes=CqlSinkWrites(sink, settings.concurrency),
        states=CqlSinkStates(sink),
        lake=LakeChangeSlices(
            config.lake_path,
            settings.slice_rows,
            peer_lake=peer_lake,
            spill_dir=settings.spill_dir,
        ),
        checkpoints=CqlCheckpointStore(source, config.checkpoint_keyspace),
        source_clocks=ClockReaderOnDemand(source, config),
        spark=SparkReplicationJobs(config, source, sink, settings, sink_config, spark),
        settings=settings,
        on_applied=on_applied,
    )


class SparkReplicationJobs:
    """The copy and the apply on Spark
    (:class:`cdcgen.replication.replication_run.SparkJobs`): their tasks reach the clusters
    as ``config`` and ``sink_config`` describe them."""

    def __init__(
        self,
        config: PipelineConfig,
        source: CqlClient,
        sink: CqlClient,
        settings: ReplicationSettings,
        sink_config: PipelineConfig | None,
        spark: SparkSession | None,
    ) -> None:
        self.config = config
        self.source = source
        self.sink = sink
        self.settings = settings
        self.sink_config = sink_config
        self.spark = spark

    def check_clusters(self) -> None:
        check_described(self.source, self.config, "source")
        check_described(self.sink, self.sink_config or self.config, "sink")

    def copier(self, job: Replication, shape: SinkShape) -> SparkTableCopy:
        from cdcgen.spark_runtime.session import JobKind, job_session

        target = copy_target(
            self.config, self.sink_config or self.config, job.source, job.sink, shape.table,
            self.settings,
        )  # fmt: skip
        session = self.spark or job_session(JobKind.REPLICATION_COPY)
        return SparkTableCopy(session, self.source, self.sink, target, self.settings.copy_splits)

    def slice_apply(self, job: Replication, shape: SinkShape, run_id: str) -> SparkApply | None:
        """The run's slices applied on Spark (``CDCGEN_REPLICATION_APPLY_TASKS`` tasks
        each; unset: None, in the run's process)."""
        from cdcgen.spark_runtime.session import JobKind, job_session

        if not self.settings.apply_tasks:
            return None
        if self.sink_config is None:
            raise ReplicationError(
                "CDCGEN_REPLICATION_APPLY_TASKS needs the sink's configuration "
                "(CDCGEN_SINK_*), which the Spark tasks reach the sink with"
            )
        target = ApplyJob(
            session_key(self.sink_config, self.settings), shape, job.source, job.sink, run_id,
            self.settings,
        )  # fmt: skip
        session = self.spark or job_session(JobKind.REPLICATION_APPLY)
        return SparkApply(session, target, self.settings.apply_tasks)


def check_described(client: CqlClient, config: PipelineConfig, role: str) -> None:
    """The Spark tasks connect with ``config``: it must name the cluster ``client`` was
    opened with (its contact points and port), or they would copy elsewhere."""
    cluster = client.cluster
    given = {str(point) for point in cluster.contact_points}
    if cluster.port != config.port or not given & set(config.contact_points):
        raise ConfigError(
            f"the {role} settings ({','.join(config.contact_points)}:{config.port}) do not "
            f"describe the {role} cluster connected to ({','.join(sorted(given))}:"
            f"{cluster.port}); pass its configuration"
        )
