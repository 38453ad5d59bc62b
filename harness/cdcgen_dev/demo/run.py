"""One demo run in one source mode, from an empty sandbox to the summary line.

The steps are those of ``make demo`` (see :mod:`cdcgen_dev.demo`); the last line
printed is always one JSON object, whatever happened, so a script or a test can
read the outcome without parsing prose.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cdcgen.config import PipelineConfig
from cdcgen.core.generation import SourceMode
from cdcgen_dev.demo.modes import SHOP_TABLE, Emulated, ModePlan, MoreWrites
from cdcgen_dev.demo.replication import SINK_KEYSPACE, bootstrap, replicate
from cdcgen_dev.demo.steps import (
    DEMO_DIR,
    DagRunner,
    DemoFailed,
    changes_summaries,
    count_changes,
    prepare_home,
    read_back,
    report_index,
    start_cassandra,
    still_v1,
)
from cdcgen_dev.paths import CHECKOUT_REPORTS
from cdcgen_dev.sandbox import sandbox_settings

if TYPE_CHECKING:
    from cdcgen.adapters.readback import Comparison
    from cdcgen_dev.cassandra import SandboxUser

#: Keyspace prefix of everything the demo emulates and publishes.
PREFIX = "demo_"
#: The keyspace of the demo's CDC table.
SHOP = f"{PREFIX}shop"
#: Short, so generations start operating a few seconds after they are made.
RING_DELAY = timedelta(seconds=1)

Say = Callable[[str], None]


def say(message: str) -> None:
    print(message, flush=True)


def demo_config(
    mode: SourceMode, contact_points: list[str] | None = None, prefix: str = PREFIX
) -> PipelineConfig:
    """The sandbox's settings under the demo's own prefix, in ``mode``.

    ``CDCGEN_*`` variables still apply to the rest (the report directory, where the
    Airflow UI's report pages find the demo's reports; unset, the checkout's
    ``reports/``). The lake is the demo's own, emptied each time: validation compares a
    generation with the previous one in it.
    """
    overrides: dict[str, Any] = {
        **sandbox_settings(prefix),
        "source_mode": mode,
        "ring_delay": RING_DELAY,
        "lake_path": DEMO_DIR / "lake",
    }
    if contact_points:
        overrides["contact_points"] = tuple(contact_points)
    environ = {"CDCGEN_REPORT_DIR": str(CHECKOUT_REPORTS), **os.environ}
    return PipelineConfig.from_env(environ).with_overrides(**overrides)


def write_more(plan: ModePlan, config: PipelineConfig, say: Say, keyspace: str = SHOP
               ) -> MoreWrites:  # fmt: skip
    """The mode's writes after the sink's bootstrap, on the cluster :func:`emulate` made."""
    from cdcgen.adapters.cql import client_for
    from cdcgen_dev.emulator import SandboxCluster

    assert plan.more is not None
    with client_for(config) as client:
        cluster = SandboxCluster.from_config(client, config)
        return plan.more(cluster, keyspace, plan.nodes, say)


def emulate(plan: ModePlan, config: PipelineConfig, say: Say, keyspace: str = SHOP) -> Emulated:
    """A fresh cluster under the config's prefix (its keyspaces, ``keyspace`` and lake
    reset), with the CDC table ``keyspace.orders``."""
    from cdcgen.adapters.cql import client_for
    from cdcgen_dev.emulator import SandboxCluster
    from cdcgen_dev.emulator.schema_setup import drop_keyspaces

    shutil.rmtree(config.lake_path, ignore_errors=True)
    with client_for(config) as client:
        drop_keyspaces(client, config.source_schema)
        client.session.execute(f"DROP KEYSPACE IF EXISTS {keyspace}", timeout=120)
        cluster = SandboxCluster.from_config(client, config)
        return plan.emulate(cluster, keyspace, plan.nodes, say)


#: The summary's ``replication`` in the modes that do not replicate: the replication
#: reads the lake and the base table, whatever the source mode, so the demo replicates
#: in raft mode (``make demo``'s) only, where a second run also applies changes.
NOT_REPLICATED = "in raft mode only (make demo): it reads the lake, the same in every mode"

#: What the checks against the ring must say: they run wherever a vnode ring is read;
#: tablets stream sets follow tablets, not the ring.
RING_CHECKS_OK: dict[SourceMode, tuple[str, ...]] = {
    SourceMode.RAFT: ("passed",),
    SourceMode.GOSSIP: ("passed",),
    SourceMode.V1: ("passed",),
    SourceMode.TABLETS: ("not applicable",),
}


def blank_result(plan: ModePlan, table: str) -> dict[str, Any]:
    """The summary's keys before anything is measured."""
    return {
        "source_mode": str(plan.mode),
        "cdc_table": table,
        "generations_published": 0,
        "streams_published": 0,
        "validation": "not run",
        "ring_checks": "not run",
        "report": None,
        "changes_rows": 0,
        "colocation": "not run",
    }


def publish_generations(
    plan: ModePlan, runner: DagRunner, result: dict[str, Any], expected: int
) -> dict[str, Any]:
    """``cdc_generations``; in V1 mode also the rewrite and a forced run from V2."""
    summary = runner.run("cdc_generations")
    if plan.mode is not SourceMode.V1:
        return summary
    result["before_rewrite"] = {
        "generations_published": summary["generations_published"],
        "validation": summary["validation"],
        "as_expected": summary["generations_published"] == expected
        and summary["validation"] == "passed",
    }
    runner.say("      published as V1; now the 4.3 -> 4.4 rewrite (cdc_generations_maintenance)")
    runner.run("cdc_generations_maintenance", summary_expected=False)
    if still_v1(runner.config):
        raise DemoFailed("the maintenance run left no 'rewritten' marker: readers still use V1")
    runner.say("      'rewritten' is set: publishing again from the V2 tables (force)")
    return runner.run("cdc_generations", conf={"force": True})


def run_demo(
    plan: ModePlan,
    user: SandboxUser,
    *,
    emulate_only: bool = False,
    say: Say = say,
    airflow_python: Path | None = None,
) -> int:
    """The demo in ``plan``'s mode; prints the summary line, returns the exit status.
    ``airflow_python``: another virtualenv's interpreter whose Airflow runs the DAGs."""
    began = time.monotonic()
    DEMO_DIR.mkdir(parents=True, exist_ok=True)
    table = f"{SHOP}.{SHOP_TABLE}"
    result = blank_result(plan, table)
    replicates = plan.more is not None
    steps = [
        "Cassandra sandbox (leased; started if none runs)",
        "Airflow home",
        f"emulating ScyllaDB, {plan.description} (prefix {PREFIX}), with a workload",
        "airflow dags test cdc_generations"
        + (" (V1), the rewrite, then again from V2" if plan.mode is SourceMode.V1 else ""),
        "reading the published tables back and comparing them with the source",
        f"airflow dags test cdc_changes ({table}), then the lake against the source",
    ]
    if replicates:
        steps += [
            f"airflow dags test cdc_replication: {SINK_KEYSPACE} bootstrapped from a "
            f"snapshot of {table}",
            "more writes after the snapshot, across one more switch",
            "cdc_generations, cdc_changes and cdc_replication again: the changes applied to "
            "the sink, then both tables compared",
        ]
    steps = [f"{n}/{len(steps)} {step}" for n, step in enumerate(steps, 1)]
    try:
        say(steps[0])
        config = demo_config(plan.mode, start_cassandra(user, say))
        say(steps[1])
        home = prepare_home(say, airflow_python)
        say(steps[2])
        emulated = emulate(plan, config, say)
        config = config.with_overrides(extra={**config.extra, **emulated.connection_extra})
        result.update(
            generations_emulated=len(emulated.history),
            generations_expected=emulated.expected_generations,
            workload_writes=emulated.writes,
        )
        if emulate_only:
            result.update(status="emulated", seconds=round(time.monotonic() - began, 1))
            say(f"Emulated {plan.mode} under {PREFIX}*; the DAGs were not run (--emulate-only).")
            print(json.dumps(result))
            return 0
        runner = DagRunner(config, home, say, emulated.connection_extra, airflow_python)
        say(steps[3])
        summary = publish_generations(plan, runner, result, emulated.expected_generations)
        say(steps[4])
        comparison = read_back(config)
        say(steps[5])
        changes = runner.run("cdc_changes", {"tables": table}, changes_summaries(config))
        counted = count_changes(config, table)
        booted: dict[str, Any] = {}
        more = MoreWrites(0, "")
        replicated: dict[str, Any] = {"replication": NOT_REPLICATED}
        if replicates:
            say(steps[6])
            booted = bootstrap(runner, config, table)
            say(steps[7])
            more = write_more(plan, config, say)
            say(steps[8])
            runner.run("cdc_generations")
            runner.run("cdc_changes", {"tables": table}, changes_summaries(config))
            replicated = replicate(runner, config, table)
    except ModuleNotFoundError as exc:
        if not (exc.name or "").startswith("cdcgen"):
            raise
        say(f"demo incomplete: part of the pipeline is not built yet ({exc.name})")
        result.update(status="incomplete", error=f"missing module {exc.name}")
        print(json.dumps(result))
        return 1
    except KeyboardInterrupt as exc:
        say(f"demo interrupted ({exc or 'Ctrl-C'}); ending what it started")
        result.update(status="interrupted", error=f"interrupted {exc}".strip())
        print(json.dumps(result))
        return 130
    except Exception as exc:
        say(f"demo failed: {type(exc).__name__}: {exc}")
        result.update(status="failed", error=f"{type(exc).__name__}: {exc}")
        print(json.dumps(result))
        return 1

    expected = emulated.expected_generations
    result.update(
        generations_published=summary["generations_published"],
        streams_published=summary["streams_published"],
        validation=summary["validation"],
        ring_checks=summary.get("ring_checks", "not run"),
        generation_lake_versions={
            iso: read["version"] for iso, read in summary.get("lake_versions", {}).items()
        },
        report=report_index(config, summary),
        data_docs=summary.get("reports", []),
        generations_matching_source=comparison.matching,
        sensor_deferrals=summary["deferrals"],
        changes_rows=changes["changes_rows"],
        colocation=changes["colocation"],
        row_checks=changes["checks"],
        changes_matching_source=counted["lake"] == counted["source"],
        lake_format=changes.get("lake_format"),
        lake_versions=changes.get("lake_versions", {}).get(table, []),
        lake_version=counted["version"],
        watermark=changes["watermarks"].get(table),
        **booted,
        writes_after_bootstrap=more.writes,
        switch_after_bootstrap=more.switch or None,
        **replicated,
        target_keyspace=config.target_keyspace,
        lake=str(config.lake_path),
        seconds=round(time.monotonic() - began, 1),
    )
    explain(plan, emulated, summary, comparison, changes, counted, result, say)
    ok = (
        summary["validation"] == "passed"
        and summary.get("ring_checks") in RING_CHECKS_OK[plan.mode]
        and summary["generations_published"] == expected
        and comparison.matching == expected
        and result.get("before_rewrite", {}).get("as_expected", True)
        and changes["colocation"] == "passed"
        and changes["changes_rows"] == counted["source"] > 0
        and (not replicates or replicated["sink_matches_source"])
        and (not replicates or replicated["applied_log_rows"] > 0)
    )
    result["status"] = "ok" if ok else "unexpected"
    print(json.dumps(result))
    return 0 if ok else 1


def explain(
    plan: ModePlan,
    emulated: Emulated,
    summary: dict[str, Any],
    comparison: Comparison,
    changes: dict[str, Any],
    counted: dict[str, int],
    result: dict[str, Any],
    say: Say,
) -> None:
    """The outcome in a few sentences, before the JSON line."""
    made, findable = len(emulated.history), emulated.expected_generations
    published, streams = summary["generations_published"], summary["streams_published"]
    target = result["target_keyspace"]
    say("")
    say(f"Source mode {plan.mode}: emulated {made} generation(s), of which a reader can find")
    say(f"{findable}; the DAG published {published} ({streams} streams) to {target}.")
    if "before_rewrite" in result:
        before = result["before_rewrite"]["generations_published"]
        say(f"Before the rewrite it published {before} from the V1 tables.")
    say(f"Validation: {summary['validation']} (checks against the ring: {result['ring_checks']}).")
    say(f"Read back: {comparison.matching} of {comparison.published} published generations")
    say("match the source exactly.")
    say(f"Changes: {changes['changes_rows']} rows of {emulated.table} in the lake (the source's")
    say(f"log table holds {counted['source']}); colocation {changes['colocation']}, row checks")
    say(f"{changes['checks']}; watermark {result['watermark']}.")
    if "sink_table" not in result:
        say(f"Replication: {result['replication']}.")
        say(f"Report: {result['report']}")
        return
    match = "equals" if result["sink_matches_source"] else "DIFFERS FROM"
    sink, copied = result["sink_table"], result["bootstrap_copied_rows"]
    switch = result["switch_after_bootstrap"]
    operations = ", ".join(f"{k} {v}" for k, v in result["applied_operations"].items())
    say(f"Replication: {sink} was bootstrapped with {copied} rows.")
    if result["writes_after_bootstrap"]:
        more = f"{result['writes_after_bootstrap']} more writes"
        say(more + (f" ({switch})" if switch else "") + " then reached it as")
        say(f"{result['applied_log_rows']} applied log rows ({operations}).")
    say(f"It ({result['replicated_rows']} rows) {match} the source, write times included;")
    extra = result["sink_extra_empty_rows"]
    if extra:
        say(f"{extra} empty row(s) only on the sink: rows an UPDATE created, given a marker by")
        say("the copy (CQL cannot read the source's), then emptied by later deletes.")
    say(f"consistent until {result['sink_consistent_until']}.")
    say(f"Report: {result['report']}")
