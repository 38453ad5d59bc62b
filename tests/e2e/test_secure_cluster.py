"""The pipelines against a cluster that demands a password and TLS, as production does.

The secure sandbox node (127.0.0.9: PasswordAuthenticator, client encryption with a CA it
generated) is started once for this module and stopped after it unless it was already
running. One emulated raft cluster on it goes through both DAGs with the credentials on
the ``cdc_source`` connection (login, password, ``tls_ca_file``), which reach every
session: the tasks, the inline trigger, the Spark driver and its Python workers. Then
the password is looked for everywhere it must not be, including the command lines and
environments of the processes while they run. Refusals are checked by the
message a user reads: a wrong password, a client that does not trust the CA, and the
writes a read-only role may not make, which `cdcgen check` names.
"""

from __future__ import annotations

import dataclasses
import os
import sqlite3
import time
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest
from dag_scenarios import RING_DELAY, Scenario, assert_ok
from process_watch import SPARK_SUBMIT, ProcessWatch

from cdcgen.core.generation import SourceMode
from cdcgen_dev.cassandra.secure import SecureEndpoint, SecureSandbox
from cdcgen_dev.sandbox import sandbox_config

pytestmark = [pytest.mark.e2e, pytest.mark.integration, pytest.mark.timeout(1500)]

KEYSPACE = "e2e_sec_shop"
TABLE = f"{KEYSPACE}.orders"
READER = "cdcgen_reader"


@pytest.fixture(scope="module")
def secure() -> Iterator[SecureEndpoint]:
    sandbox = SecureSandbox()
    started_here = not sandbox.is_running()
    endpoint = sandbox.up()
    yield endpoint
    if started_here:
        sandbox.down()


@pytest.fixture
def secure_scenario(secure: SecureEndpoint, airflow_home: Path, tmp_path: Path) -> Scenario:
    from cdcgen.adapters.cql import client_for
    from cdcgen_dev.emulator.schema_setup import drop_keyspaces

    assert secure.password_file is not None and secure.tls is not None
    config = sandbox_config(
        "e2e_sec_",
        contact_points=secure.contact_points,
        port=secure.port,
        username="cdcgen",
        password_file=secure.password_file,
        tls_ca_file=secure.tls.ca,
        source_mode=SourceMode.RAFT,
        lake_path=tmp_path / "lake",
        report_dir=tmp_path / "reports",
        ring_delay=RING_DELAY,
    )
    with client_for(config) as client:
        drop_keyspaces(client, config.source_schema)
        client.session.execute(f"DROP KEYSPACE IF EXISTS {KEYSPACE}", timeout=120)
    return Scenario("secure", config, airflow_home)


def test_both_dags_run_with_password_and_tls(secure_scenario: Scenario) -> None:
    from cdcgen_dev.emulator import WorkloadSpec, create_cdc_table, orders_table, run_workload

    scn = secure_scenario
    with scn.client() as client:
        cluster = scn.cluster(client)
        cluster.join_node(SourceMode.RAFT, shards=2, vnodes=4, seed=31)
        create_cdc_table(cluster, orders_table(KEYSPACE))
        written = run_workload(
            cluster,
            WorkloadSpec(keyspace=KEYSPACE, rate=100, duration=timedelta(seconds=2), seed=32),
        )
        source_rows = len(list(client.session.execute(f"SELECT pk FROM {TABLE}_scylla_cdc_log")))
    assert written.log_rows > 0 and source_rows > 0

    password = Path(str(scn.config.access.password_file)).read_text().encode()
    with ProcessWatch(password) as watch:
        run, summary = scn.run()
        assert_ok(run)
        assert summary["generations_published"] == 1
        assert scn.compare().matching == 1

        changes, changes_summary = scn.run_dag(
            "cdc_changes",
            conf={"tables": TABLE},
            extra={"confidence_window_seconds": 1},
            summaries=scn.config.report_dir / "summaries" / "changes",
        )
        assert_ok(changes)
    table = changes_summary["tables"][TABLE]
    assert table["status"] == "done" and table["colocation"] == "passed", changes_summary
    assert table["rows"] == source_rows

    # No process had the password in its command line, and no Spark process (the
    # connection holds it, in this Airflow's environment) had it in its environment;
    # the watch saw spark-submit's JVM and the Python it starts.
    assert not watch.leaks, watch.leaks
    assert any(SPARK_SUBMIT in argv for argv in watch.spark.values()), watch.spark
    assert any("python" in argv.split(" ")[0] for argv in watch.spark.values()), watch.spark
    # Nor anywhere a user could read it: the runs' output, the reports, the lake, the
    # task logs, the Airflow metadata DB (XCom, rendered task fields, trigger kwargs).
    places = {"output": (run.output + changes.output).encode()}
    for root in (scn.config.report_dir, scn.config.lake_path, scn.home / "logs"):
        places |= {str(p): p.read_bytes() for p in Path(root).rglob("*") if p.is_file()}
    with sqlite3.connect(scn.home / "airflow.db") as db:
        for table in ("xcom", "rendered_task_instance_fields", "trigger", "task_instance"):
            places[table] = repr(db.execute(f"SELECT * FROM {table}").fetchall()).encode()
    assert not [where for where, data in places.items() if password in data]


def test_wrong_password_fails_at_once_naming_the_host(secure_scenario: Scenario) -> None:
    scn = dataclasses.replace(
        secure_scenario,
        config=secure_scenario.config.with_overrides(password_file=None, password="not-it"),
    )
    run, _ = scn.run()
    assert not run.succeeded
    assert "cluster refused access (not retried): 127.0.0.9:9042: authentication refused" in (
        run.output
    ), run.tail(60)
    with sqlite3.connect(scn.home / "airflow.db") as db:
        tries = db.execute(
            "SELECT state, try_number FROM task_instance WHERE task_id = 'detect'"
        ).fetchall()
    assert tries == [("failed", 1)]  # its retries=2 were not used


def test_refusals_name_host_and_cause(secure: SecureEndpoint) -> None:
    from cdcgen.adapters.cql import open_client
    from cdcgen.adapters.errors import AccessRefused, is_transient

    config = secure.config()
    with pytest.raises(AccessRefused) as wrong:
        open_client(config.with_overrides(password_file=None, password="not-it"))
    assert str(wrong.value).startswith("127.0.0.9:9042: authentication refused")
    assert "Bad credentials" in str(wrong.value) and not is_transient(wrong.value)

    with pytest.raises(AccessRefused) as untrusted:
        open_client(config.with_overrides(tls_ca_file=None))  # the system's CAs only
    assert str(untrusted.value).startswith("127.0.0.9:9042: TLS handshake failed")
    assert "CERTIFICATE_VERIFY_FAILED" in str(untrusted.value)

    open_client(config).close()  # and the right ones get in


def test_sandbox_cli_prints_where_the_credentials_are(secure: SecureEndpoint) -> None:
    """``cdcgen sandbox up --auth --tls`` on the running node: the settings, not the secret."""
    import subprocess
    import sys

    program = "import sys; from cdcgen.cli import main; sys.exit(main(sys.argv[1:]))"
    result = subprocess.run(
        [sys.executable, "-c", program, "sandbox", "up", "--auth", "--tls"],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert secure.password_file is not None and secure.tls is not None
    assert f"password in {secure.password_file}" in result.stdout
    assert f"export CDCGEN_TLS_CA_FILE={secure.tls.ca}" in result.stdout
    assert secure.password_file.read_text() not in result.stdout + result.stderr
    refused = subprocess.run(
        [sys.executable, "-c", program, "sandbox", "up", "--tls"],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert refused.returncode != 0
    assert "runs with {'auth': True, 'tls': True}" in refused.stderr


def test_check_names_each_write_a_read_only_role_may_not_make(
    secure_scenario: Scenario,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The node enforces grants (``CassandraAuthorizer``). A role that may read every
    keyspace and write none passes the reading checks and fails the target and state
    keyspaces' ones, each naming the refused write; granted ``MODIFY`` on them, it
    passes every check."""
    from cdcgen.adapters.checkpoints import CqlCheckpointStore
    from cdcgen.adapters.publisher import CqlDescriptionPublisher
    from cdcgen.cli import main
    from cdcgen.core.errors import ExitCode
    from cdcgen_dev.emulator import create_cdc_table, orders_table

    scn = secure_scenario
    config = scn.config
    password = tmp_path / "reader-password"
    password.write_text("read-only-reader-password")
    password.chmod(0o600)
    with scn.client() as client:
        cluster = scn.cluster(client)
        cluster.join_node(SourceMode.RAFT, shards=2, vnodes=2, seed=33)
        create_cdc_table(cluster, orders_table(KEYSPACE))
        CqlDescriptionPublisher(client, config).ensure_tables()
        CqlCheckpointStore(client, config.checkpoint_keyspace).ensure_schema()
        client.session.execute(f"DROP ROLE IF EXISTS {READER}")
        client.session.execute(
            f"CREATE ROLE {READER} WITH PASSWORD = %s AND LOGIN = true",
            (password.read_text(),),
        )
        client.session.execute(f"GRANT SELECT ON ALL KEYSPACES TO {READER}")
    env = {
        **config.to_env(),
        "CDCGEN_USERNAME": READER,
        "CDCGEN_PASSWORD_FILE": str(password),
        "CDCGEN_SPARK_MASTER": "local[1]",
    }
    for variable in list(os.environ):
        if variable.startswith("CDCGEN_"):
            monkeypatch.delenv(variable)
    for variable, value in env.items():
        monkeypatch.setenv(variable, value)
    try:
        status = main(["check"])
        out = capsys.readouterr().out
        assert status != ExitCode.OK, out
        verdicts = {line[6:].split(":", 1)[0]: line for line in out.splitlines()}
        for passing in ("connection", "source mode", "cdc tables", "log tables", "lake"):
            assert verdicts[passing].startswith("ok"), out
        for keyspace, check in (
            (config.target_keyspace, "target keyspace"),
            (config.checkpoint_keyspace, "state keyspace"),
        ):
            line = verdicts[check]
            assert line.startswith("FAIL") and f"cannot write {keyspace}." in line, out
            assert "permission refused" in line and READER in line, out

        with scn.client() as client:
            for keyspace in {config.target_keyspace, config.checkpoint_keyspace}:
                client.session.execute(f"GRANT MODIFY ON KEYSPACE {keyspace} TO {READER}")
        deadline = time.monotonic() + 30  # the node's permissions cache (2 s by default)
        while (status := main(["check"])) != ExitCode.OK and time.monotonic() < deadline:
            capsys.readouterr()
            time.sleep(1)
        out = capsys.readouterr().out
        assert status == ExitCode.OK, out
    finally:
        with scn.client() as client:
            client.session.execute(f"DROP ROLE IF EXISTS {READER}")
