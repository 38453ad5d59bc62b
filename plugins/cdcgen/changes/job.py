"""A changes run against a real cluster and Spark: the one place adapters are built.

``spark/extract_changes.py`` (spark-submit) calls :func:`run_changes_job`, which opens
one driver connection, builds the adapters of every port for the table
(:func:`table_adapters`) and hands them to the orchestrator (:func:`.changes_run.run_changes`).
Tests build the same adapters and wrap some of them (a checkpoint store that fails
after N saves, a reader factory that fails after N streams) to kill a run part-way.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING

from cdcgen.adapters.change_log import CqlReaderFactory, ReadOptions
from cdcgen.adapters.checkpoints import CqlCheckpointStore
from cdcgen.adapters.clock_reader import clock_reader_for
from cdcgen.adapters.cluster_access import access_for
from cdcgen.adapters.cql import CqlClient, open_client
from cdcgen.adapters.delta_tables import stored_schema
from cdcgen.adapters.generation_sources import source_for
from cdcgen.adapters.log_tables import describe_log_table
from cdcgen.adapters.read_retries import Backoff
from cdcgen.adapters.read_sessions import SessionKey
from cdcgen.adapters.stream_routing import range_replicas, stream_replicas
from cdcgen.changes.changes_lake import DeltaChangesLake
from cdcgen.changes.changes_run import ChangesPorts, ChangesRequest, run_changes
from cdcgen.changes.columns import column_specs, lake_schema, text_columns
from cdcgen.changes.layout import table_root
from cdcgen.changes.range_reads import RangeFanout
from cdcgen.changes.read_task import ReadJob
from cdcgen.changes.row_validation import SparkRowChecks
from cdcgen.changes.settings import ChangesSettings
from cdcgen.changes.stream_reads import ReaderFactory, StreamFanout
from cdcgen.config import PipelineConfig
from cdcgen.core.cdc_log import TableRef
from cdcgen.core.changes_result import ChangesRunResult
from cdcgen.core.log_table import LogTable
from cdcgen.ports import ClockReader, GenerationSource
from cdcgen.spark_runtime.session import JobKind, job_session

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


def read_options(settings: ChangesSettings) -> ReadOptions:
    """The reader's share of the changes settings."""
    return ReadOptions(
        page_size=settings.page_size,
        request_timeout=settings.request_timeout,
        consistency=settings.read_consistency,
        backoff=Backoff(settings.max_attempts, settings.backoff_base, settings.backoff_max),
    )


def reader_factory(
    config: PipelineConfig, settings: ChangesSettings, log_table: LogTable
) -> CqlReaderFactory:
    """What a Spark task opens its reader with: the nodes, routing and read options."""
    key = SessionKey(
        tuple(config.contact_points),
        config.port,
        log_table.partitioner,
        settings.request_timeout.total_seconds(),
        config.protocol_version,
        access_for(config),
    )
    return CqlReaderFactory(key, log_table, read_options(settings))


@dataclass(frozen=True)
class TableAdapters:
    """The adapters of one table's run, concrete, so tests can reach and wrap them."""

    log_table: LogTable
    generations: GenerationSource
    clocks: ClockReader
    checkpoints: CqlCheckpointStore
    lake: DeltaChangesLake
    row_checks: SparkRowChecks

    def ports(self, *, validate: bool = True) -> ChangesPorts:
        return ChangesPorts(
            self.generations,
            self.clocks,
            self.checkpoints,
            self.lake,
            self.row_checks if validate else None,
        )


def table_adapters(
    client: CqlClient,
    spark: SparkSession,
    config: PipelineConfig,
    settings: ChangesSettings,
    table: TableRef,
    *,
    readers: ReaderFactory | None = None,
) -> TableAdapters:
    """Every adapter of ``table``'s run over one connected ``client`` and ``spark``.

    ``readers`` replaces the Spark tasks' reader factory (tests wrap the default one,
    :func:`reader_factory`). Creates the state tables when they are missing.
    """
    log_table = describe_log_table(client, table, config.source_schema, settings.log_partitioner)
    checkpoints = CqlCheckpointStore(client, config.checkpoint_keyspace)
    checkpoints.ensure_schema()
    readers = readers or reader_factory(config, settings, log_table)
    fanout = StreamFanout(
        readers, stream_replicas(client, log_table), settings.streams_per_task, settings.min_tasks
    )
    prepared = client.session.prepare(log_table.window_query())
    root = table_root(config.lake_path, table)
    # Decided once, here: the lake table's own schema says which columns an earlier
    # version wrote as text, and the job keeps writing them so.
    kept_text = text_columns(prepared.result_metadata, stored_schema(root))
    schema = lake_schema(column_specs(prepared.result_metadata, kept_text))
    job = ReadJob(readers, log_table, schema, settings.batch_rows, kept_text)
    ring = partial(range_replicas, client, table.keyspace)
    ranges = RangeFanout(ring, settings.read_strategy, settings.ranges_from, settings.min_tasks)
    lake = DeltaChangesLake(spark, root, job, fanout, ranges)
    row_checks = SparkRowChecks(
        spark,
        lake,
        log_table.partition_key,
        leeway_us=int(config.generation_leeway.total_seconds() * 1_000_000),
        report_dir=config.report_dir,
        source_counts=fanout if settings.verify_source_counts else None,
    )
    return TableAdapters(
        log_table,
        source_for(client, config),
        clock_reader_for(client, config),
        checkpoints,
        lake,
        row_checks,
    )


def run_changes_job(
    config: PipelineConfig,
    request: ChangesRequest,
    *,
    settings: ChangesSettings | None = None,
    validate: bool = True,
    spark: SparkSession | None = None,
) -> ChangesRunResult:
    """Extract ``request``'s closed windows, check them, record the run (what the Spark
    job runs); settings default to the ``CDCGEN_CHANGES_*`` environment."""
    settings = settings or ChangesSettings.from_env()
    session = spark or job_session(JobKind.CHANGES_EXTRACT)
    client = open_client(config)
    try:
        adapters = table_adapters(client, session, config, settings, request.table)
        return run_changes(
            request,
            adapters.ports(validate=validate),
            config,
            settings,
            cdc_ttl=adapters.log_table.ttl,
        )
    finally:
        client.close()
