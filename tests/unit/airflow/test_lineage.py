"""What each task tells Airflow's OpenLineage integration it reads and writes
(cdcgen.airflow.lineage): the Spark operators through ``get_openlineage_facets_on_*``,
which the OpenLineage provider's own extractor manager picks up; the ``@task`` bodies
through the hook lineage collector, as Assets of cdcgen's scheme that the provider
turns back into the datasets with the converter cdcgen's provider registers."""

from __future__ import annotations

from typing import Any

import pytest
from airflow.providers.common.compat.openlineage.utils.utils import translate_airflow_asset
from airflow.providers.openlineage.extractors.manager import ExtractorManager
from airflow.sdk import Asset
from airflow.sdk.lineage import HookLineageCollector

from cdcgen.airflow import lineage
from cdcgen.airflow.hooks import CdcSourceHook
from cdcgen.airflow.spark_submit import (
    ChangesExtractOperator,
    GenerationExtractOperator,
    ReplicationBootstrapOperator,
)
from cdcgen.airflow.xcom import to_xcom
from cdcgen.config import PipelineConfig
from cdcgen.core.generation import Generation
from cdcgen.core.lineage_names import DatasetName
from cdcgen.core.time import from_millis
from cdcgen.replication.replication_run import sink_variables

GENERATION = Generation(from_millis(1_767_225_660_000), "c0ffee00-0000-1000-8000-000000000001")
STREAM_SET = Generation(from_millis(1_767_225_660_000), "7a61", "shop.orders")
SOURCE = "cassandra://node1:9042"


def source_env(**settings: Any) -> dict[str, str]:
    """A planned job's variables: the source's settings as a task hands them over."""
    base = {"contact_points": "node1,node2", "port": 9042, "lake_path": "/data/lake"}
    return PipelineConfig.validated({**base, **settings}).to_env()


def pairs(datasets: list[Any]) -> list[tuple[str, str]]:
    return [(d.namespace, d.name) for d in datasets]


def extracted(operator: Any) -> Any:
    """The lineage the OpenLineage provider's own extractor manager takes from ``operator``
    (as it does when the task starts)."""
    extractor = ExtractorManager()._get_extractor(operator)
    assert extractor is not None, f"the provider finds no lineage on {type(operator).__name__}"
    return extractor.extract()


@pytest.mark.parametrize(
    ("mode", "prefix", "tables"),
    [
        ("raft", "", ["system.cdc_generations_v3"]),
        ("gossip", "", ["system_distributed_everywhere.cdc_generation_descriptions_v2"]),
        (
            "v1",
            "emu_",
            [
                "emu_system_distributed.cdc_generation_descriptions",
                "emu_system_distributed.cdc_streams_descriptions",
            ],
        ),
    ],
)
def test_a_generation_extract_reads_its_mode_s_metadata_tables_into_the_lake(
    mode: str, prefix: str, tables: list[str]
) -> None:
    operator = GenerationExtractOperator(
        task_id="extract", application="job.py", generation=to_xcom(GENERATION),
        env_vars=source_env(source_mode=mode, source_keyspace_prefix=prefix),
    )  # fmt: skip
    found = extracted(operator)
    assert pairs(found.inputs) == [(SOURCE, table) for table in tables]
    assert pairs(found.outputs) == [("file", "/data/lake/generations")]


def test_a_tablets_stream_set_goes_to_the_stream_sets_table() -> None:
    operator = GenerationExtractOperator(
        task_id="extract", application="job.py", generation=to_xcom(STREAM_SET),
        env_vars=source_env(source_mode="tablets", lake_path="s3://bucket/lake"),
    )  # fmt: skip
    found = operator.get_openlineage_facets_on_complete(None)
    assert pairs(found.inputs) == [
        (SOURCE, "system.cdc_streams_state"),
        (SOURCE, "system.cdc_streams_history"),
    ]
    assert pairs(found.outputs) == [("s3://bucket", "lake/stream_sets")]


def test_a_changes_extract_reads_the_table_s_log_into_its_lake_table() -> None:
    operator = ChangesExtractOperator(
        task_id="extract", application="job.py", table="shop.orders", env_vars=source_env()
    )
    found = extracted(operator)
    assert pairs(found.inputs) == [(SOURCE, "shop.orders_scylla_cdc_log")]
    assert pairs(found.outputs) == [("file", "/data/lake/changes/shop.orders")]


def test_a_bootstrap_reads_the_source_table_and_writes_the_sink_s() -> None:
    sink = PipelineConfig.validated({"contact_points": "sink1", "port": 19042})
    operator = ReplicationBootstrapOperator(
        task_id="bootstrap", application="job.py", table="shop.orders",
        application_args=["--table", "shop.orders", "--sink-table", "replica.orders"],
        env_vars={**source_env(), **sink_variables(sink)},
    )  # fmt: skip
    found = extracted(operator)
    assert pairs(found.inputs) == [(SOURCE, "shop.orders")]
    assert pairs(found.outputs) == [("cassandra://sink1:19042", "replica.orders")]
    # A table the plan gave no bootstrap (the task is skipped) claims nothing.
    skipped = ReplicationBootstrapOperator(task_id="b", application="job.py", table="shop.orders")
    assert pairs(extracted(skipped).inputs) == pairs(extracted(skipped).outputs) == []


def test_a_dataset_travels_as_an_asset_and_back_through_the_provider_s_converter() -> None:
    name = DatasetName("cassandra://node1:9042", "ks.cdc_generation_timestamps")
    asset = Asset(uri=lineage.asset_uri(name))  # normalised by the scheme's handler
    converted = translate_airflow_asset(asset, None)
    assert converted is not None, "the provider found no converter for cdcgen's scheme"
    assert (converted.namespace, converted.name) == (name.namespace, name.name)
    odd = DatasetName("file", "/data/lake & more/a=b?c")
    assert lineage.dataset_of_uri(Asset(uri=lineage.asset_uri(odd)).uri) == odd


def test_a_uri_of_the_scheme_that_carries_no_dataset_is_refused() -> None:
    for uri in (
        "cdcgen-dataset://openlineage/?name=ks.t",
        "cdcgen-dataset://elsewhere/?name=ks.t&namespace=file",
        "cdcgen-dataset://openlineage/?name=a&name=b&namespace=file",
        "cdc://cdc_source/ks/t",
    ):
        with pytest.raises(ValueError, match="not a cdcgen-dataset URI"):
            lineage.dataset_of_uri(uri)
    with pytest.raises(ValueError):
        Asset(uri="cdcgen-dataset://openlineage/?namespace=file")


def test_the_publish_and_apply_bodies_report_to_the_collector() -> None:
    config = PipelineConfig.validated({"contact_points": "node1", "target_keyspace": "ks"})
    collector = HookLineageCollector()
    published = [
        (SOURCE, "ks.cdc_streams_descriptions_v2"),
        (SOURCE, "ks.cdc_generation_timestamps"),
        (SOURCE, "ks.cdc_streams"),
        (SOURCE, "ks.cdc_timestamps"),
    ]
    lineage.report_publication(config, [GENERATION, STREAM_SET], collector)
    lineage.report_publication(config, [], collector)  # nothing published: nothing claimed
    sink = PipelineConfig.validated({"contact_points": "sink1"})
    lineage.report_replication(config, sink, "shop.orders", "replica.orders", collector)
    collected = collector.collected_assets
    inputs = [translate_airflow_asset(info.asset, None) for info in collected.inputs]
    outputs = [translate_airflow_asset(info.asset, None) for info in collected.outputs]
    lake = config.lake_path
    assert pairs(inputs) == [
        ("file", f"{lake}/generations"),
        ("file", f"{lake}/stream_sets"),
        ("file", f"{lake}/changes/shop.orders"),
    ]
    assert pairs(outputs) == [*published, ("cassandra://sink1:9042", "replica.orders")]
    assert all(isinstance(info.context, CdcSourceHook) for info in collected.outputs)


def test_every_spark_task_of_the_dags_says_its_lineage() -> None:
    """The DAGs' Spark tasks are the operators that know what their job reads and writes
    (a plain CdcSparkSubmitOperator would report nothing)."""
    from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator

    from cdcgen.airflow.dag_factories import (
        cdc_changes_dag,
        cdc_generations_dag,
        cdc_replication_dag,
    )
    from cdcgen.airflow.spark_submit import CdcSparkSubmitOperator

    spark = {
        f"{dag.dag_id}.{task.task_id}": getattr(task, "operator_class", type(task))
        for dag in (cdc_generations_dag(), cdc_changes_dag(), cdc_replication_dag())
        for task in dag.tasks
        if issubclass(getattr(task, "operator_class", type(task)), SparkSubmitOperator)
    }
    assert sorted(spark) == [
        "cdc_changes.table.extract",
        "cdc_generations.generation.extract",
        "cdc_replication.table.bootstrap",
    ]
    base = CdcSparkSubmitOperator.lineage_datasets
    assert all(kind.lineage_datasets is not base for kind in spark.values()), spark
