"""Everything the Spark jobs need in a Spark's ``jars/``:
``python -m cdcgen.spark_runtime.install``.

Delta's jars (:mod:`cdcgen.spark_runtime.delta`), S3A's (:mod:`cdcgen.spark_runtime.s3a`,
for lakes on S3) and the lake's log store for S3 (:mod:`cdcgen.spark_runtime.log_store`,
compiled here), into PySpark's ``jars/`` or ``--into`` another Spark's; then, for PySpark,
the driver's class archive (:mod:`cdcgen.spark_runtime.class_archive`). Run by ``make
setup`` every time: a no-op when all are there, pinned hashes, source digest and archive key
matching.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from cdcgen.spark_runtime import delta, s3a
from cdcgen.spark_runtime.class_archive import build_archive
from cdcgen.spark_runtime.delta import install_jars
from cdcgen.spark_runtime.errors import ArchiveError, JarError
from cdcgen.spark_runtime.log_store import build_log_store


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--into", type=Path, help="a jars/ folder (default: PySpark's)")
    parser.add_argument(
        "--cache",
        type=Path,
        default=delta.JAR_CACHE,
        help=f"where downloaded jars are kept and looked up first (default {delta.JAR_CACHE})",
    )
    parser.add_argument("--no-cache", action="store_true", help="always download")
    args = parser.parse_args(argv)
    try:
        cache = None if args.no_cache else args.cache
        written = install_jars(args.into, (*delta.JARS, *s3a.JARS), cache)
        built = build_log_store(args.into)
    except JarError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    for path in [*written, *([built] if built else [])]:
        print(f"installed {path}", file=sys.stderr)
    if args.into is None:  # the archive is of a Spark this Python runs: PySpark's
        try:
            archive = build_archive()
        except ArchiveError as exc:  # a slower start, nothing worse: say so and go on
            print(f"warning: no class archive for Spark's driver: {exc}", file=sys.stderr)
        else:
            if archive is not None:
                print(f"installed {archive}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
