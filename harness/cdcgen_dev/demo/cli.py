"""The demo's command line: ``python -m cdcgen_dev.demo [--mode MODE] [--wait] ...``.

Parsing comes first and touches nothing, so ``--help`` and a wrong ``--mode`` never
start a sandbox, take the lock or reset a keyspace. Then the lock (one demo at a
time), then the run inside a guard that ends every process the demo started.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from cdcgen.core.generation import SourceMode
from cdcgen_dev.demo.lock import DemoBusy, DemoLock, Holder
from cdcgen_dev.demo.modes import PLANS, ModePlan, plan_for
from cdcgen_dev.demo.steps import DEMO_DIR

#: Held for the whole run; names the holder's pid for a second demo.
LOCK_PATH = DEMO_DIR / "demo.lock"
#: Exit status when another demo holds the sandbox (EX_TEMPFAIL: try again later).
BUSY = 75

_DESCRIPTION = """\
Run the whole cdcgen pipeline once on the local sandbox, then check it worked.

Leases the local Cassandra (starting one if none runs), emulates a ScyllaDB
cluster in the chosen source mode under the demo_ keyspace prefix (reset first)
with a workload on demo_shop.orders, runs `airflow dags test cdc_generations`,
reads the published tables back and compares them with the source, runs
`airflow dags test cdc_changes` and counts the lake against the source's log
table. The last line printed is one JSON object (source_mode, cdc_table,
generations_published, streams_published, validation, report, changes_rows,
colocation, ...); the exit status is 0 only if everything matched.

One demo at a time: a second one refuses at once, naming the pid of the one
running, unless --wait. A Cassandra the demo started is stopped at the end if
nobody else uses it (`make sandbox-up` first keeps one running between demos);
no other process it started outlives it, even on Ctrl-C."""


def build_parser() -> argparse.ArgumentParser:
    modes = "\n".join(f"  {plan.mode:<8} {plan.description}" for plan in PLANS.values())
    parser = argparse.ArgumentParser(
        prog="python -m cdcgen_dev.demo",
        description=_DESCRIPTION,
        epilog=f"source modes:\n{modes}\n\n`make demo MODE=gossip` passes --mode.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--mode",
        choices=[str(mode) for mode in PLANS],
        default=str(SourceMode.RAFT),
        help="how the emulated cluster stores its CDC generations (default: %(default)s)",
    )
    parser.add_argument(
        "--wait",
        action="store_true",
        help="if another demo is running, wait for it to finish instead of refusing",
    )
    parser.add_argument(
        "--emulate-only",
        action="store_true",
        help="stop after emulating the cluster and its workload (run the DAGs yourself)",
    )
    parser.add_argument(
        "--airflow-python",
        type=Path,
        metavar="PYTHON",
        help="run the DAGs with the Airflow of this virtualenv's interpreter, which has the "
        "provider installed (python -m cdcgen_dev.provider_venv builds one from the wheel)",
    )
    return parser


def main(argv: Sequence[str] | None = None, *, lock_path: Path | None = None) -> int:
    """Parse, take the lock, run; the exit status (``BUSY`` if another demo runs)."""
    args = build_parser().parse_args(argv)
    plan = plan_for(args.mode)
    lock = DemoLock(lock_path or LOCK_PATH, mode=args.mode)
    try:
        lock.acquire(wait=args.wait, on_wait=_tell_waiting)
    except DemoBusy as exc:
        print(f"demo: {exc}", file=sys.stderr)
        return BUSY
    except KeyboardInterrupt:
        return 130
    try:
        return _run_guarded(
            plan,
            emulate_only=args.emulate_only,
            # absolute, not resolved: a virtualenv's python is a link to the base interpreter
            airflow_python=args.airflow_python.absolute() if args.airflow_python else None,
        )
    finally:
        lock.release()


def _run_guarded(plan: ModePlan, *, emulate_only: bool, airflow_python: Path | None) -> int:
    """The run, its sandbox lease released, then every leftover child ended."""
    from cdcgen_dev.cassandra import SandboxUser
    from cdcgen_dev.demo.processes import no_process_left_behind
    from cdcgen_dev.demo.run import run_demo
    from cdcgen_dev.demo.steps import sandbox_pids

    user = SandboxUser()
    with no_process_left_behind(keep=sandbox_pids):
        try:
            return run_demo(plan, user, emulate_only=emulate_only, airflow_python=airflow_python)
        finally:
            user.release()


def _tell_waiting(holder: Holder | None) -> None:
    who = holder.describe() if holder else "another demo"
    print(f"demo: waiting for {who} to finish (--wait)", flush=True)
