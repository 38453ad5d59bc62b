"""``python -m cdcgen_dev.devstack up|down|status|screenshot URL PNG`` (scripts/fullstack.sh)."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from cdcgen_dev.devstack.processes import StackError
from cdcgen_dev.devstack.stack import DEFAULT_BASE, AirflowStack, StackSettings


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m cdcgen_dev.devstack",
        description="Airflow 3 (api-server, scheduler, dag-processor, triggerer) on a private "
        "PostgreSQL, with logs under var/fullstack.",
    )
    parser.add_argument("--base", type=Path, default=DEFAULT_BASE)
    parser.add_argument("--api-port", type=int, default=28080)
    parser.add_argument("--pg-port", type=int, default=55432)
    parser.add_argument("--dags-folder", type=Path, default=None)
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("up", help="start (or finish starting) the stack and wait until healthy")
    sub.add_parser("down", help="stop every component and PostgreSQL")
    sub.add_parser("status", help="pids and /api/v2/monitor/health")
    shot = sub.add_parser("screenshot", help="headless Chromium screenshot of a URL")
    shot.add_argument("url")
    shot.add_argument("png", type=Path)
    args = parser.parse_args(argv)

    settings = StackSettings(base=args.base, api_port=args.api_port, pg_port=args.pg_port)
    if args.dags_folder:
        settings = StackSettings(
            base=args.base,
            api_port=args.api_port,
            pg_port=args.pg_port,
            dags_folder=args.dags_folder.resolve(),
        )
    stack = AirflowStack(settings)
    try:
        if args.command == "up":
            stack.up()
            print(f"Airflow is up: {stack.base_url} (logs in {args.base / 'logs'})")
            print(f"reports: {stack.base_url}/cdcgen-reports/")
        elif args.command == "down":
            stopped = stack.down()
            print("stopped: " + (", ".join(stopped) or "nothing was running"))
        elif args.command == "status":
            print(json.dumps(stack.status(), indent=2, default=str))
        else:
            from cdcgen_dev.devstack.browser import Browser
            from cdcgen_dev.devstack.png import pixel_stats

            with Browser(args.base / "browser") as browser:
                browser.open(args.url)
                browser.screenshot(args.png)
            print(f"{args.png}: {pixel_stats(args.png)}")
    except StackError as exc:
        print(f"devstack: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
