"""The installed class archive is the one a session's driver JVM maps, for real.

A driver started the way every session starts (:func:`cdcgen.spark_runtime.session.spark_session`)
logs where each class came from; Spark's own classes must come from the archive
(``shared objects file (top)``), not from its jars. A driver of its own, in a child
process: the shared test session's JVM was started once, with other options.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from cdcgen.spark_runtime.class_archive import archive_path

DRIVER = """
import sys
from cdcgen.spark_runtime.session import spark_session
spark = spark_session("class-archive-test", {
    "spark.driver.extraJavaOptions": "-Xlog:class+load=info:file=" + sys.argv[1],
})
assert spark.range(100).count() == 100
spark.stop()
"""


def test_spark_drivers_map_the_installed_class_archive(tmp_path: Path) -> None:
    archive = archive_path()
    assert archive is not None and archive.is_file(), f"make setup installs {archive}"
    log = tmp_path / "classes.log"
    env = {key: value for key, value in os.environ.items() if key != "CDCGEN_SPARK_MASTER"}
    env.pop("CDCGEN_SPARK_CLASS_ARCHIVE", None)
    subprocess.run([sys.executable, "-c", DRIVER, str(log)], env=env, check=True, timeout=300)
    spark_classes = [line for line in log.read_text().splitlines() if " org.apache.spark." in line]
    from_archive = [line for line in spark_classes if "source: shared objects file (top)" in line]
    from_jars = [
        line for line in spark_classes if "source: file:" in line or "source: jar:" in line
    ]
    # (Lambdas and generated classes are made at run time: never in an archive.)
    assert len(from_archive) > 2000
    assert len(from_jars) < 0.05 * len(from_archive), from_jars[:5]
