"""OpenLineage inputs and outputs of the DAGs' tasks, where Airflow's integration reads them.

The names are :mod:`cdcgen.core.lineage_names`'s (the naming spec's, ScyllaDB's tables under
its Cassandra convention); this module says which datasets each task reads and writes,
and hands them over in the two ways Airflow's OpenLineage provider takes them:

- **The Spark operators** (:mod:`cdcgen.airflow.spark_submit`) are classes of ours: they
  answer ``get_openlineage_facets_on_start`` / ``_on_complete`` with an
  ``OperatorLineage`` built from their rendered fields (the planned job's ``CDCGEN_*``
  variables, its arguments, the mapped group's table or generation), which is what the
  job reads and writes.
- **The ``@task`` bodies** (publish, apply) are TaskFlow tasks, which have no such
  methods. They report through Airflow's hook lineage collector
  (:func:`report`): the provider reads it for a task without an extractor of its own,
  when the task completes. ``inlets`` / ``outlets`` were the other way, and the wrong
  one here: they are fixed when the DAG file is parsed, while a mapped task's table (and
  the cluster, the target keyspace and the lake a run's Params choose) are known only
  when it runs, so every mapped instance would claim every table or none; and an Asset
  outlet also makes Airflow record an asset event and schedule its consumers, which a
  lineage record must not do. The collector lives in the task's own process, so each
  mapped instance reports its own table.

The collector takes Assets, not OpenLineage datasets: a dataset travels as an Asset of the
scheme :data:`SCHEME` (``cdcgen-dataset://openlineage/?name=...&namespace=...``), which
the provider registers (:func:`cdcgen.airflow.provider.get_provider_info`, ``asset-uris``)
with :func:`normalize_uri` and :func:`to_openlineage`, the converter the OpenLineage
provider calls to turn it back into the dataset. Such an Asset is never an outlet of a
task: it exists only between the collector and the provider.

Without the OpenLineage provider, or with it but no transport configured, nothing here is
called (operators) or the collector discards what it is given (tasks).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any
from urllib.parse import SplitResult, parse_qsl, urlencode, urlsplit

from cdcgen.config import PipelineConfig
from cdcgen.core.cdc_log import TableRef
from cdcgen.core.generation import Generation, SourceMode
from cdcgen.core.lineage_names import DatasetName, lake_dataset, log_table_dataset, table_dataset
from cdcgen.schema import TABLET_STREAMS, TABLET_TIMESTAMPS, Table

if TYPE_CHECKING:
    from airflow.providers.openlineage.extractors import OperatorLineage
    from airflow.sdk import Asset, BaseHook
    from airflow.sdk.lineage import HookLineageCollector
    from openlineage.client.event_v2 import Dataset

#: The Asset URI scheme that carries an OpenLineage dataset through the hook lineage
#: collector.
SCHEME = "cdcgen-dataset"
_HOST = "openlineage"
_KEYS = ("name", "namespace")

#: The metadata tables a generation's description is read from, per source mode.
GENERATION_SOURCES: dict[SourceMode, tuple[Table, ...]] = {
    SourceMode.RAFT: (Table.CDC_GENERATIONS_V3,),
    SourceMode.GOSSIP: (Table.CDC_GENERATION_DESCRIPTIONS_V2,),
    SourceMode.V1: (Table.CDC_GENERATION_DESCRIPTIONS_V1, Table.CDC_STREAMS_DESCRIPTIONS_V1),
    SourceMode.TABLETS: (Table.CDC_STREAMS_STATE, Table.CDC_STREAMS_HISTORY),
}


# --- the datasets of each step -------------------------------------------------------


def planned_config(env_vars: Mapping[str, Any] | None) -> PipelineConfig:
    """The configuration a Spark job gets: its planned ``CDCGEN_*`` variables alone (not
    this process's environment, which the job does not see)."""
    return PipelineConfig.from_env({k: str(v) for k, v in (env_vars or {}).items()})


def generation_sources(config: PipelineConfig) -> list[DatasetName]:
    """The source cluster's tables a generation's extract reads (the sandbox's prefixed
    copies when the configuration names a prefix: what is really read)."""
    schema = config.source_schema
    return [
        table_dataset(config.contact_points, config.port, schema.name(table))
        for table in GENERATION_SOURCES[config.source_mode]
    ]


def generation_lake(config: PipelineConfig, generation: Generation) -> DatasetName:
    """The lake's Delta table a generation is extracted into: the vnode generations', or
    the tablets stream sets' for a table's stream set."""
    from cdcgen.generation_lake.lake_tables import GENERATIONS_DIR, STREAM_SETS_DIR

    return lake_dataset(config.lake_path, STREAM_SETS_DIR if generation.table else GENERATIONS_DIR)


def published_tables(config: PipelineConfig, generation: Generation) -> list[DatasetName]:
    """The target keyspace's description tables a generation is published to."""
    if generation.table:
        names = [TABLET_STREAMS, TABLET_TIMESTAMPS]
    else:
        names = [
            Table.CDC_STREAMS_DESCRIPTIONS_V2.name_only,
            Table.CDC_GENERATION_TIMESTAMPS.name_only,
        ]
    return [
        table_dataset(config.contact_points, config.port, f"{config.target_keyspace}.{name}")
        for name in names
    ]


def changes_lake(config: PipelineConfig, table: TableRef | str) -> DatasetName:
    """The lake's Delta table of a CDC table's changes."""
    from cdcgen.changes.layout import CHANGES_DIR

    ref = table if isinstance(table, TableRef) else TableRef.parse(table)
    return lake_dataset(config.lake_path, CHANGES_DIR, ref.qualified)


def log_table(config: PipelineConfig, table: TableRef | str) -> DatasetName:
    """A CDC table's log table on the source cluster."""
    return log_table_dataset(config.contact_points, config.port, table)


def cluster_table(config: PipelineConfig, table: TableRef | str) -> DatasetName:
    """A table of the cluster ``config`` connects to (a source base table, a sink table)."""
    return table_dataset(config.contact_points, config.port, table)


# --- to OpenLineage ------------------------------------------------------------------


def ol_dataset(name: DatasetName) -> Dataset:
    """The OpenLineage dataset of ``name``."""
    from openlineage.client.event_v2 import Dataset

    return Dataset(namespace=name.namespace, name=name.name)


def operator_lineage(
    inputs: Iterable[DatasetName] = (), outputs: Iterable[DatasetName] = ()
) -> OperatorLineage[Dataset, Any]:
    """What an operator's ``get_openlineage_facets_on_*`` returns (repeats removed)."""
    from airflow.providers.openlineage.extractors import OperatorLineage

    return OperatorLineage(
        inputs=[ol_dataset(name) for name in dict.fromkeys(inputs)],
        outputs=[ol_dataset(name) for name in dict.fromkeys(outputs)],
    )


def asset_uri(name: DatasetName) -> str:
    """The URI of the Asset that carries ``name`` through the hook lineage collector."""
    query = urlencode(sorted({"name": name.name, "namespace": name.namespace}.items()))
    return f"{SCHEME}://{_HOST}/?{query}"


def dataset_of_uri(uri: str) -> DatasetName:
    """The dataset an :func:`asset_uri` carries; ValueError for any other URI."""
    parsed = urlsplit(uri)
    pairs = parse_qsl(parsed.query, keep_blank_values=True)
    values = dict(pairs)
    if (
        parsed.scheme != SCHEME
        or parsed.netloc != _HOST
        or len(pairs) != len(_KEYS)
        or sorted(values) != sorted(_KEYS)
    ):
        raise ValueError(f"{uri}: not a {SCHEME} URI (expected {asset_uri_example()})")
    return DatasetName(values["namespace"], values["name"])


def asset_uri_example() -> str:
    return asset_uri(DatasetName("cassandra://node1:9042", "keyspace.table"))


def normalize_uri(parsed: SplitResult) -> SplitResult:
    """The scheme's URI handler (Airflow normalises an Asset's URI with it): a URI that
    carries no dataset is refused (ValueError), any other is kept as it is."""
    dataset_of_uri(parsed.geturl())
    return parsed


def to_openlineage(asset: Asset, lineage_context: Any = None) -> Dataset:
    """The scheme's OpenLineage converter: the dataset the Asset carries."""
    return ol_dataset(dataset_of_uri(asset.uri))


def report(
    context: BaseHook,
    inputs: Sequence[DatasetName] = (),
    outputs: Sequence[DatasetName] = (),
    collector: HookLineageCollector | None = None,
) -> None:
    """Tell the hook lineage collector (the process's, unless given) what the running
    task read and wrote through ``context`` (a hook of the cluster it used). Nothing is
    kept without a lineage reader (no OpenLineage transport configured: Airflow's
    collector then discards)."""
    from airflow.sdk.lineage import get_hook_lineage_collector

    collector = collector or get_hook_lineage_collector()
    for name in dict.fromkeys(inputs):
        collector.add_input_asset(context=context, uri=asset_uri(name))
    for name in dict.fromkeys(outputs):
        collector.add_output_asset(context=context, uri=asset_uri(name))


def report_publication(
    config: PipelineConfig,
    generations: Sequence[Generation],
    collector: HookLineageCollector | None = None,
) -> None:
    """The publish task's lineage: each published generation's lake table in, the target
    keyspace's description tables out (nothing when it published none)."""
    from cdcgen.airflow.hooks import CdcSourceHook

    if generations:
        report(
            CdcSourceHook(),
            inputs=[generation_lake(config, generation) for generation in generations],
            outputs=[name for g in generations for name in published_tables(config, g)],
            collector=collector,
        )


def report_replication(
    config: PipelineConfig,
    sink: PipelineConfig,
    table: TableRef | str,
    sink_table: TableRef | str,
    collector: HookLineageCollector | None = None,
) -> None:
    """A table's apply: the lake's changes table of ``table`` in, ``sink_table`` on the
    sink cluster out."""
    from cdcgen.airflow.hooks import CdcSourceHook

    report(
        CdcSourceHook(),
        inputs=[changes_lake(config, table)],
        outputs=[cluster_table(sink, sink_table)],
        collector=collector,
    )
