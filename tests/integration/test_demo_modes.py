"""What the demo emulates in each ``--mode``, read back through the pipeline's own readers.

The DAG runs are covered by the e2e tests; this checks the demo's side of the bargain
against a real Cassandra, fast: in every mode the product's generation source finds
exactly the generations the demo expects it to publish, and every log row the workload
wrote lies in a stream of a generation that source returns for the CDC table, so the
changes DAG can replicate all of them (in gossip mode only if the workload stayed in
the current generation). In V1 mode the same holds after the 4.3 -> 4.4 rewrite the
maintenance DAG runs. Each mode runs under its own keyspace prefix and lake, never the
demo's, so a demo running meanwhile is not disturbed.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from cdcgen.adapters.cql import CqlClient, client_for
from cdcgen.adapters.generation_sources import source_for
from cdcgen.adapters.v1_sources import detect_legacy_mode
from cdcgen.config import PipelineConfig
from cdcgen.core.cdc_log import TableRef
from cdcgen.core.generation import SourceMode
from cdcgen.core.stream_id import StreamId
from cdcgen.core.windows import GenerationSpan
from cdcgen_dev.demo.modes import PLANS, SHOP_TABLE, Emulated
from cdcgen_dev.demo.run import demo_config, emulate
from cdcgen_dev.emulator import orders_table
from cdcgen_dev.emulator.verify import LogCheck, check_log_routing, read_log_rows

pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]


def _spans_stream_at(spans: list[GenerationSpan]) -> Any:
    """The routing check's lookup, answered only from what the product's source returned."""

    def stream_at(write_ts: datetime, token: int) -> tuple[datetime, StreamId]:
        for span in spans:
            if span.start <= write_ts and (span.end is None or write_ts < span.end):
                return span.start, span.mapping.get_stream(token)
        raise LookupError(f"no generation the source returned operates at {write_ts}")

    return stream_at


def _routing(client: CqlClient, config: PipelineConfig, keyspace: str) -> tuple[int, LogCheck]:
    """(generations the source finds, the log checked against the table's spans)."""
    source = source_for(client, config)
    spans = source.spans(TableRef(keyspace, SHOP_TABLE))
    rows = read_log_rows(client, orders_table(keyspace, SHOP_TABLE))
    found = len(source.list_generations())
    return found, check_log_routing(
        orders_table(keyspace, SHOP_TABLE), rows, _spans_stream_at(spans)
    )


@pytest.mark.parametrize("mode", list(PLANS))
def test_the_pipeline_finds_what_the_demo_expects(
    mode: SourceMode, cassandra_single: Any, tmp_path: Path
) -> None:
    plan = PLANS[mode]
    prefix = f"it_demo_{mode}_"
    keyspace = f"{prefix}shop"
    config = demo_config(mode, cassandra_single.contact_points, prefix=prefix).with_overrides(
        lake_path=tmp_path / "lake"
    )
    said: list[str] = []
    emulated: Emulated = emulate(plan, config, said.append, keyspace=keyspace)
    config = config.with_overrides(extra=emulated.connection_extra)

    assert emulated.table == f"{keyspace}.{SHOP_TABLE}"
    assert emulated.writes > 0 and any("workload" in line for line in said)
    with client_for(config) as client:
        found, check = _routing(client, config, keyspace)
        assert found == emulated.expected_generations, said
        assert check.ok, (check.misplaced[:5], check.bad_batches[:5])
        assert check.rows > 0
        if mode is SourceMode.GOSSIP:
            assert len(emulated.history) == 3 and found == 1
        else:
            assert found == len(emulated.history)
            assert len(check.rows_by_generation) >= 2, "the workload did not cross a switch"

        if mode is SourceMode.V1:
            from cdcgen.pipeline.maintenance import V1Rewrite, rewrite_v1

            assert detect_legacy_mode(client, config.source_schema) is SourceMode.V1
            rewrite = rewrite_v1(config)  # what cdc_generations_maintenance runs
            assert isinstance(rewrite, V1Rewrite) and rewrite.marker_written, rewrite
            assert detect_legacy_mode(client, config.source_schema) is SourceMode.GOSSIP
            found, check = _routing(client, config, keyspace)
            assert found == emulated.expected_generations
            assert check.ok and check.rows > 0, check.misplaced[:5]
