"""Read the published tables back and compare them with the source: the proof a run worked.

Used by ``make demo`` and the e2e tests, and handy after an incident: it answers
"is what consumers read exactly what the cluster committed?" without trusting
anything the pipeline recorded about itself.
"""

from __future__ import annotations

from typing import Any

from cdcgen.config import PipelineConfig
from cdcgen.core.generation import MetadataError, SourceMode
from cdcgen.core.identifiers import check_identifier
from cdcgen.pipeline.generations import from_millis, generation_record, to_millis
from cdcgen.schema import GENERATION_TIMESTAMPS_KEY, Table

StreamsByRange = dict[int, frozenset[bytes]]

# Names of the tablets views in the target keyspace (ScyllaDB's system.cdc_timestamps and
# system.cdc_streams, which the publisher writes as real tables).
TABLET_TIMESTAMPS = "cdc_timestamps"
TABLET_STREAMS = "cdc_streams"
CURRENT = 0


def read_published(client: Any, keyspace: str) -> dict[int, StreamsByRange]:
    """Every vnode generation in the target: timestamp ms -> range_end -> stream blobs.

    Only generations whose timestamp row exists count: that row is written last and
    is what tells a consumer a generation's streams are complete.
    """
    ks = check_identifier(keyspace, "target keyspace")
    timestamps = client.execute(
        f"SELECT time FROM {ks}.{Table.CDC_GENERATION_TIMESTAMPS.name_only} WHERE key = %s",
        (GENERATION_TIMESTAMPS_KEY,),
    )
    published: dict[int, StreamsByRange] = {}
    for (moment,) in timestamps:
        rows = client.execute(
            f"SELECT range_end, streams FROM {ks}.{Table.CDC_STREAMS_DESCRIPTIONS_V2.name_only} "
            "WHERE time = %s",
            (moment,),
        )
        published[to_millis(moment)] = {
            int(end): frozenset(bytes(s) for s in streams or ()) for end, streams in rows
        }
    return published


def read_published_tablets(client: Any, keyspace: str, table: str) -> dict[int, frozenset[bytes]]:
    """A tablets table's published stream sets: timestamp ms -> current stream blobs."""
    ks = check_identifier(keyspace, "target keyspace")
    base_ks, _, base_table = table.partition(".")
    stamps = client.execute(
        f"SELECT timestamp FROM {ks}.{TABLET_TIMESTAMPS} "
        "WHERE keyspace_name = %s AND table_name = %s",
        (base_ks, base_table),
    )
    found: dict[int, frozenset[bytes]] = {}
    for (moment,) in stamps:
        rows = client.execute(
            f"SELECT stream_state, stream_id FROM {ks}.{TABLET_STREAMS} "
            "WHERE keyspace_name = %s AND table_name = %s AND timestamp = %s",
            (base_ks, base_table, moment),
        )
        found[to_millis(moment)] = frozenset(bytes(i) for state, i in rows if state == CURRENT)
    return found


def streams_by_range(description: Any) -> StreamsByRange:
    """A :class:`TopologyDescription` in the shape :func:`read_published` returns."""
    return {
        entry.range_end: frozenset(bytes(s) for s in entry.streams) for entry in description.entries
    }


def compare_with_source(config: PipelineConfig) -> dict[str, Any]:
    """Read every published generation back and compare it with the source's description.

    Returns ``{"published": n, "matching": n, "mismatches": [...], "unpublished": [...]}``;
    ``unpublished`` lists committed generations (ISO timestamps) with no publication, and
    a mismatch names the generation and what differs.  In tablets mode a generation is
    one table's stream set and is compared with the ``cdc_streams`` view.
    """
    from cdcgen.adapters.cql import client_for
    from cdcgen.adapters.generation_sources import source_for

    report: dict[str, Any] = {"published": 0, "matching": 0, "mismatches": [], "unpublished": []}
    tablets = config.source_mode == SourceMode.TABLETS
    with client_for(config) as client:
        source = source_for(client, config)
        names = {str(k): v for k, v in source.table_ids().items()} if tablets else {}  # type: ignore[attr-defined]
        vnodes = {} if tablets else read_published(client, config.target_keyspace)
        per_table = {
            name: read_published_tablets(client, config.target_keyspace, name)
            for name in set(names.values())
        }
        for ref in source.list_generations():
            ms = to_millis(ref.timestamp)
            got: Any = per_table[names[ref.id]].get(ms) if tablets else vnodes.get(ms)
            if got is None:
                report["unpublished"].append(generation_record(ref, "")["timestamp"])
                continue
            report["published"] += 1
            try:
                description = source.read_generation(ref).description
            except MetadataError as exc:  # a corrupt source generation must not be published
                report["mismatches"].append(f"{ref.id}: published but unreadable at source: {exc}")
                continue
            expected: Any = (
                frozenset(bytes(s) for s in description.streams())
                if tablets
                else streams_by_range(description)
            )
            if got == expected:
                report["matching"] += 1
            else:
                report["mismatches"].append(_difference(ref.id, ms, got, expected))
    return report


def _difference(label: str, ms: int, got: Any, expected: Any) -> str:
    when = from_millis(ms).isoformat()
    if isinstance(expected, frozenset):
        return (
            f"{label} ({when}): {len(got)} streams published, {len(expected)} at source, "
            f"{len(got ^ expected)} differ"
        )
    differing = sorted(set(got) ^ set(expected)) or sorted(
        end for end in expected if got.get(end) != expected[end]
    )
    return (
        f"{label} ({when}): {len(got)} ranges published, {len(expected)} at source; "
        f"first differing range_end {differing[0]}"
    )
