"""The job behind ``spark/extract_changes.py``: extract one CDC table's closed windows.

With ``--follow-until``, the job follows the table instead (:mod:`cdcgen.changes.table_follow`):
from ``--interval-start`` on, a cycle every ``--every`` seconds (default
``CDCGEN_CHANGES_FOLLOW_EVERY_SECONDS``) extracts the windows closed since the last,
until that moment; its result adds the cycles up and lists each.

The arguments say what to extract; how (nodes, keyspaces, lake, reports, read tuning)
comes from the ``CDCGEN_*`` environment as the typed configuration, exactly as the DAG's
tasks saw it (:meth:`~cdcgen.env_settings.EnvSettings.to_env`), the same way the generation
extract job receives it. Calls :func:`cdcgen.changes.job.run_changes_job`, prints the
run's JSON on stdout and writes it to ``--output``. Exit status
(:class:`~cdcgen.core.errors.ExitCode`): 0 done, 3 terminal (the row checks failed, the
log no longer holds the changes: re-bootstrap, or another terminal error such as a
refused login; the result's ``status`` says which), 4 transient (a read failed after its
retries, no node answered: run it again).
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence
from datetime import datetime, timedelta
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

from cdcgen.core.changes_status import ChangesRunStatus
from cdcgen.core.errors import CdcgenError, ExitCode

if TYPE_CHECKING:
    from cdcgen.core.changes_result import ChangesRunResult


def _moment(text: str) -> datetime:
    from cdcgen.core.time import parse_moment

    return parse_moment(text, "interval bound")


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--table", required=True, help="keyspace.table (the base table)")
    parser.add_argument("--interval-start", required=True, type=_moment)
    parser.add_argument("--interval-end", type=_moment, help="required unless following")
    parser.add_argument(
        "--follow-until", type=_moment, default=None,
        help="follow the table until this moment instead of reading one interval",
    )  # fmt: skip
    parser.add_argument(
        "--every", type=float, default=None, metavar="SECONDS",
        help="a follow's cycle period (default CDCGEN_CHANGES_FOLLOW_EVERY_SECONDS)",
    )  # fmt: skip
    parser.add_argument("--mode", choices=["incremental", "backfill"], default="incremental")
    parser.add_argument("--run-id", default=None)
    parser.add_argument("--dag-id", default="")
    parser.add_argument("--no-validate", action="store_true", help="skip the row checks")
    parser.add_argument(
        "--output", type=Path, default=None, help="also write the run's JSON to this file"
    )
    args = parser.parse_args(argv)
    if args.interval_end is None and args.follow_until is None:
        parser.error("--interval-end is required unless --follow-until is given")
    if args.follow_until is not None and args.mode != "incremental":
        parser.error("a follow is incremental: --follow-until takes no --mode backfill")
    if args.every is not None and args.every <= 0:
        parser.error(f"--every must be a positive number of seconds, not {args.every}")
    return args


def _keep_following(
    path: Path | None, kept: list[ChangesRunResult], so_far: ChangesRunResult
) -> None:
    """The follow's sum so far, kept for a failure's result and written whole over the
    last (not printed: the log gets one line per cycle from the follow, and the whole
    result once, at the end). Its status is not ``done``, so that a follow killed
    part-way fails its run's summary while saying what its cycles did."""
    from cdcgen.pipeline.result_files import write_result

    kept[:] = [so_far]
    write_result(path, so_far.updated(status=ChangesRunStatus.FOLLOWING).to_json(), echo=False)


def main(argv: Sequence[str] | None = None) -> int:
    from cdcgen.adapters.errors import TransientReadError, exit_code
    from cdcgen.changes.changes_run import ChangesRequest
    from cdcgen.changes.job import run_changes_job
    from cdcgen.changes.settings import ChangesSettings
    from cdcgen.changes.table_follow import follow_changes
    from cdcgen.config import PipelineConfig
    from cdcgen.core.cdc_log import TableRef
    from cdcgen.core.changes_result import ChangesRunResult
    from cdcgen.core.errors import DataExpired
    from cdcgen.core.follow_loop import FollowPace
    from cdcgen.core.windows import Interval, Mode
    from cdcgen.pipeline.result_files import write_result as _write
    from cdcgen.validation.errors import ChangesInvalid

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s %(message)s")
    args = parse_args(argv)
    config = PipelineConfig.from_env()
    request = ChangesRequest(
        TableRef.parse(args.table),
        Interval(args.interval_start, args.interval_end or args.follow_until),
        Mode(args.mode),
        run_id=args.run_id or "",
        dag_id=args.dag_id,
    )
    # A follow's failure keeps what its cycles did (the sum so far), not an empty result.
    so_far: list[ChangesRunResult] = []
    empty = ChangesRunResult(table=args.table, mode=request.mode, run_id=request.run_id)

    def failed() -> ChangesRunResult:
        return so_far[-1] if so_far else empty

    if args.output is not None:
        args.output.unlink(missing_ok=True)  # a re-run's result replaces the last one's
    try:
        if args.follow_until is None:
            output = run_changes_job(config, request, validate=not args.no_validate)
        else:
            settings = ChangesSettings.from_env()
            every = settings.follow_every if args.every is None else timedelta(seconds=args.every)
            pace = FollowPace(args.follow_until, every)
            output = follow_changes(
                config, request, pace, settings=settings, validate=not args.no_validate,
                on_cycle=partial(_keep_following, args.output, so_far),
            )  # fmt: skip
    except ChangesInvalid as exc:
        print(exc, file=sys.stderr)
        written = failed() if exc.output is None else exc.output
        _write(args.output, written.updated(error=str(exc)).to_json())
        return ExitCode.TERMINAL
    except DataExpired as exc:
        print(exc, file=sys.stderr)
        expired = failed().ended(ChangesRunStatus.DATA_EXPIRED, str(exc))
        _write(args.output, expired.to_json())
        return ExitCode.TERMINAL
    except TransientReadError as exc:
        print(exc, file=sys.stderr)
        retry = failed().ended(ChangesRunStatus.TRANSIENT_READ_ERROR, str(exc))
        _write(args.output, retry.to_json())
        return ExitCode.TRANSIENT
    except CdcgenError as exc:  # a refused login, a bad setting, the cluster unreachable...
        print(exc, file=sys.stderr)
        code = exit_code(exc)
        kind = (
            ChangesRunStatus.REFUSED
            if code is ExitCode.TERMINAL
            else ChangesRunStatus.TRANSIENT_ERROR
        )
        _write(args.output, failed().ended(kind, str(exc)).to_json())
        return code
    _write(args.output, output.to_json())
    return ExitCode.OK


# spark-submit runs this file (cdcgen.airflow.spark_jobs resolves it from the package).
if __name__ == "__main__":
    sys.exit(main())
