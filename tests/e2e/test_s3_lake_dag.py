"""``airflow dags test`` with the lake on S3, its access in the ``cdcgen_lake`` connection.

The S3 server is moto's on loopback. The DAG's processes get no ``AWS_*`` of their own
(blanked): whatever reaches the store comes from the Airflow connection, in the task's
process (detect, validate, publish) and in spark-submit's (the extract job, writing
through S3A and committing with delta-rs).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from dag_scenarios import Scenario, assert_ok

from cdcgen.adapters.lake_store import LakeLocation
from cdcgen.core.generation import SourceMode
from cdcgen.generation_lake.lake_tables import list_artifacts

pytestmark = [pytest.mark.e2e, pytest.mark.integration, pytest.mark.timeout(900)]

NO_AWS = ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_ENDPOINT_URL", "AWS_REGION")


def test_a_generation_extracted_and_published_through_an_s3_lake(
    scenario: Callable[..., Scenario], s3_server: Any, s3_lake: LakeLocation
) -> None:
    scn = scenario("s3lake", SourceMode.RAFT)
    with scn.client() as client:
        joined = scn.cluster(client).join_node(SourceMode.RAFT, seed=7)
    access = s3_server.env
    connection = {
        "conn_type": "aws",
        "login": access["AWS_ACCESS_KEY_ID"],
        "password": access["AWS_SECRET_ACCESS_KEY"],
        "extra": {"endpoint_url": access["AWS_ENDPOINT_URL"], "region_name": "us-east-1"},
    }
    env = {
        "CDCGEN_LAKE_PATH": s3_lake.uri,
        "AIRFLOW_CONN_CDCGEN_LAKE": json.dumps(connection),
        **dict.fromkeys(NO_AWS, ""),
    }
    run, summary = scn.run(env=env)
    assert_ok(run)
    assert summary["generations_published"] == 1 and summary["validation"] == "passed"
    assert summary["lake_format"] == "delta"
    assert access["AWS_SECRET_ACCESS_KEY"] not in run.output  # never in a log line
    # The generation is in the S3 lake, at the version validation and publication read.
    (artifact,) = list_artifacts(s3_lake)
    assert artifact.stream_count == joined.description.stream_count()
    (versions,) = summary["lake_versions"].values()
    assert versions["version"] == artifact.version
    assert versions["description_sha256"] == artifact.description_sha256
    assert all(f.uri.startswith(s3_lake.uri) for f in artifact.files)
    comparison = scn.compare()
    assert comparison.published == comparison.matching == 1
