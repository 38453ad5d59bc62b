"""``python -m cdcgen.reports``: rebuild the report site, or write a sample one."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path


def main(argv: Sequence[str] | None = None) -> int:
    from cdcgen.config import PipelineConfig

    parser = argparse.ArgumentParser(
        prog="python -m cdcgen.reports",
        description="Rebuild the HTML report site from <report-dir>/runs/ and replication/.",
    )
    parser.add_argument(
        "--report-dir",
        type=Path,
        default=None,
        help="default: CDCGEN_REPORT_DIR or ./reports",
    )
    parser.add_argument(
        "--sample", action="store_true", help="first write sample records (no cluster needed)"
    )
    args = parser.parse_args(argv)
    report_dir: Path = args.report_dir or PipelineConfig.from_env().report_dir
    if args.sample:
        from cdcgen.reports.sample import write_sample_site

        write_sample_site(report_dir)
    from cdcgen.reports.site import build_site

    paths = build_site(report_dir)
    for problem in paths.problems:
        print(f"unreadable record: {problem}", file=sys.stderr)
    print(f"report: {paths.index.resolve()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
