"""docker-compose.yaml agrees with compose and with the code (no Docker engine runs here).

First, compose's own loader (compose-go, through ``tools/compose-check``, built with the
machine's Go toolchain by :mod:`cdcgen_dev.compose_check`) must accept the file: what
``docker compose up`` would refuse (schema, undefined services or volumes, bad
durations) fails here, and broken copies prove that it would. Then the file is read
for what compose cannot know and would otherwise break only on someone's laptop:
settings the pipeline does not read (or misses), connection ids the DAGs do not use,
mounts of paths that do not exist, floating image tags, services started before what
they need is healthy, and Airflow components started with the wrong sub-command.
"""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
import yaml

from cdcgen.airflow import connections
from cdcgen.config import PipelineConfig
from cdcgen.schema import SourceSchema

REPO = Path(__file__).resolve().parents[2]
COMPOSE = REPO / "docker-compose.yaml"
#: Where the containers keep the DAGs, the lake and the reports.
CONTAINER_ROOT = "/opt/cdcgen"
#: Bind-mounted directories that runs create (git-ignored), not sources.
RUNTIME_DIRS = {"lake", "reports"}
AIRFLOW_COMMANDS = {
    "airflow-api-server": ["api-server"],
    "airflow-scheduler": ["scheduler"],
    "airflow-dag-processor": ["dag-processor"],
    "airflow-triggerer": ["triggerer"],
}
SCYLLA_NODES = ("scylla-1", "scylla-2", "scylla-3")
#: CDCGEN_* settings compose may leave to their defaults: the protocol version, unset,
#: is negotiated (ScyllaDB serves v4 and refuses v5; pinning either is a deployment's
#: choice, not the stack's); credentials and TLS, unset, mean the stack's ScyllaDB
#: nodes, which demand neither (a real cluster's come from the cdc_source connection).
OPTIONAL_SETTINGS: frozenset[str] = frozenset(
    {
        "CDCGEN_PROTOCOL_VERSION",
        "CDCGEN_USERNAME",
        "CDCGEN_PASSWORD",
        "CDCGEN_PASSWORD_FILE",
        "CDCGEN_TLS",
        "CDCGEN_TLS_CA_FILE",
        "CDCGEN_TLS_CERT_FILE",
        "CDCGEN_TLS_KEY_FILE",
        "CDCGEN_TLS_VERIFY_HOSTNAME",
        "CDCGEN_LAKE_ROOTS",  # none but the configured lake: the default is the safe one
        "CDCGEN_LOCAL_DATACENTER",  # one datacenter: every node alike
        "CDCGEN_PRUNE_EXPIRED_AFTER_SECONDS",  # off: ScyllaDB keeps every description
        "CDCGEN_SPARK_REMOTE",  # the tasks' (Airflow's) setting; the Spark daemons run no job
        "CDCGEN_SPARK_CONNECT_TOKEN",  # the Connect server's and its clients' only
        "CDCGEN_SPARK_CONNECT_TOKEN_FILE",  # given as a variable here
        "CDCGEN_SPARK_CONNECT_HOST",  # the Connect server's address (it alone reads it)
    }
)


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    data = yaml.safe_load(COMPOSE.read_text())
    assert isinstance(data, dict)
    return data


@pytest.fixture(scope="module")
def services(compose: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return compose["services"]


def env_of(service: Mapping[str, Any]) -> dict[str, str]:
    env = service.get("environment") or {}
    if isinstance(env, list):  # KEY=VALUE form
        env = dict(item.split("=", 1) for item in env)
    return {str(k): "" if v is None else str(v) for k, v in env.items()}


def airflow_services(services: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    return {name: s for name, s in services.items() if name.startswith("airflow-")}


def bind_mounts(service: Mapping[str, Any]) -> Iterator[tuple[str, str]]:
    """(repo-relative source, container target) of each ``./...`` bind mount."""
    for volume in service.get("volumes") or ():
        source, target, *_ = str(volume).split(":")
        if source.startswith("./"):
            yield source[2:].rstrip("/"), target


class RecordingEnv(Mapping[str, str]):
    """An environment that remembers which names were looked up."""

    def __init__(self, values: Mapping[str, str]) -> None:
        self.values = dict(values)
        self.asked: set[str] = set()

    def __getitem__(self, key: str) -> str:
        self.asked.add(key)
        return self.values[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self.values)

    def __len__(self) -> int:
        return len(self.values)


def settings_read_by_the_pipeline() -> set[str]:
    from cdcgen.spark_runtime.connect_settings import SparkConnectSettings
    from cdcgen.spark_runtime.session import JobKind, remote_for

    env = RecordingEnv({})
    PipelineConfig.from_env(env)
    remote_for(JobKind.GENERATION_EXTRACT, env)
    SparkConnectSettings.from_env(env)
    return {name for name in env.asked if name.startswith("CDCGEN_")}


def conn_ids_used_by_dags() -> set[str]:
    """Connection ids the default DAGs' tasks name (``dags/``, built by the factories):
    the sensors' and operators' ``cdc_conn_id``, ``sink_conn_id`` and Spark ``conn_id``."""
    from airflow.dag_processing.dagbag import DagBag

    bag = DagBag(dag_folder=str(REPO / "dags"))
    assert bag.import_errors == {}
    used: set[str] = set()
    for dag in bag.dags.values():
        for task in dag.tasks:
            for name in ("cdc_conn_id", "sink_conn_id", "_conn_id"):
                value = getattr(task, name, None)
                if isinstance(value, str) and value:
                    used.add(value)
    return used


# --- compose's own loader ---------------------------------------------------------------

#: What the README's `echo "AIRFLOW_UID=..." > .env` and the token's line provide.
DOTENV = {"AIRFLOW_UID": "50000", "CDCGEN_SPARK_CONNECT_TOKEN": "t" * 43}
#: (what breaks, text in the file, its replacement, what compose-go says)
BROKEN = [
    ("unknown depends_on condition", "condition: service_healthy", "condition: service_ready",
     "must be one of"),
    ("undefined service", "depends_on:\n      scylla-1:", "depends_on:\n      scylla-9:",
     'depends on undefined service "scylla-9"'),
    ("bad duration", "interval: 10s", "interval: ten seconds", "invalid duration"),
    ("misspelt key", "    volumes:\n      - scylla-1-data", "    volums:\n      - scylla-1-data",
     "volums"),
    ("undefined volume", "scylla-1-data:/var/lib/scylla", "scylla-9-data:/var/lib/scylla",
     "undefined volume scylla-9-data"),
]  # fmt: skip


@pytest.fixture(scope="session")
def compose_check() -> Path:
    from cdcgen_dev.compose_check import build

    return build()


def test_compose_loads_the_file(compose_check: Path, compose: dict[str, Any]) -> None:
    from cdcgen_dev.compose_check import check

    done = check(COMPOSE, DOTENV, binary=compose_check)
    assert done.returncode == 0, done.stderr
    project = json.loads(done.stdout)
    assert set(project["services"]) == set(compose["services"])
    # The anchors merged as compose merges them: every node runs the pinned image.
    for node in SCYLLA_NODES:
        assert project["services"][node]["image"] == compose["services"][node]["image"]


@pytest.mark.parametrize(("what", "text", "broken", "message"), BROKEN, ids=[b[0] for b in BROKEN])
def test_compose_refuses_a_broken_copy(
    compose_check: Path, tmp_path: Path, what: str, text: str, broken: str, message: str
) -> None:
    from cdcgen_dev.compose_check import check

    source = COMPOSE.read_text()
    assert text in source, f"{what}: the file no longer has {text!r}; pick another break"
    copy = tmp_path / COMPOSE.name
    copy.write_text(source.replace(text, broken, 1))
    done = check(copy, DOTENV, binary=compose_check)
    assert done.returncode != 0, f"compose-go accepted a file with {what}"
    assert message in done.stderr


# --- services and images ----------------------------------------------------------------


def test_every_component_is_there(services: dict[str, Any]) -> None:
    expected = {
        "host-check",
        *SCYLLA_NODES,
        "postgres",
        "airflow-init",
        *AIRFLOW_COMMANDS,
        "spark-master",
        "spark-worker",
        "spark-connect",
    }
    assert expected <= set(services)


def test_images_are_pinned(services: dict[str, Any]) -> None:
    for name, service in services.items():
        image = service.get("image")
        assert image, f"{name}: no image (a built service still needs a pinned tag)"
        assert re.fullmatch(r"[\w./-]+:[\w.-]*\d[\w.-]*", image), f"{name}: unpinned {image}"
        assert not image.endswith(":latest")


def test_built_images_come_from_a_pinned_dockerfile(services: dict[str, Any]) -> None:
    built = {s["build"]["dockerfile"] for s in services.values() if "build" in s}
    assert built == {"deploy/airflow.Dockerfile"}
    dockerfile = (REPO / "deploy/airflow.Dockerfile").read_text()
    bases = re.findall(r"^FROM\s+(\S+)", dockerfile, flags=re.M)
    assert set(bases) == {"apache/airflow:3.3.2-python3.11"}, "the base must match the stack"
    copies = r"^COPY\s+(?!--from)(?:--\S+\s+)*(.+)\s+\S+$"  # from the context, not a stage
    for sources in re.findall(copies, dockerfile, flags=re.M):
        for source in sources.split():
            if "[" not in source:  # README.m[d]: optional by design
                assert (REPO / source).exists(), f"Dockerfile copies missing {source}"
    constraints = (REPO / "constraints.txt").read_text()
    assert "apache-airflow==3.3.2" in constraints and "pyspark==4.1.3" in constraints
    # The lake's tables are Delta, maybe on S3: every Spark of the image needs Delta's
    # and S3A's jars and the log store compiled from source (so a JDK, not a JRE).
    assert re.search(
        r"^ && python -m cdcgen\.spark_runtime\.install --no-cache \\$", dockerfile, flags=re.M
    )
    # Data Docs served from the image load their scripts from the image, not a CDN.
    assert re.search(r"^ && python -m cdcgen\.validation\.docs_assets$", dockerfile, flags=re.M)
    assert "openjdk-17-jdk-headless" in dockerfile and "jre-headless" not in dockerfile


def test_scylla_is_a_small_cdc_capable_three_node_cluster(services: dict[str, Any]) -> None:
    for i, name in enumerate(SCYLLA_NODES):
        node = services[name]
        assert node["image"].startswith("scylladb/scylla:")
        args = [str(a) for a in node["command"]]
        joined = " ".join(args)
        assert "--seeds=scylla-1" in args
        assert re.search(r"--smp 1\b", joined)
        assert re.search(r"--memory \d+[MG]\b", joined)
        assert re.search(r"--overprovisioned 1\b", joined)
        assert node.get("healthcheck"), f"{name} needs a health check"
        if i:  # joins one at a time, after the previous node is up
            previous = SCYLLA_NODES[i - 1]
            assert node["depends_on"][previous]["condition"] == "service_healthy"
    init = services["scylla-init"]
    cql_file = init["entrypoint"][-1]
    mounts = dict((t, s) for s, t in bind_mounts(init))
    source = next(s for t, s in mounts.items() if cql_file.startswith(t + "/"))
    cql = (REPO / source / Path(cql_file).name).read_text()
    assert "cdc = {'enabled': true" in cql
    assert "tablets = {'enabled': false}" in cql  # vnode generations, what the DAG follows


def test_airflow_components_run_the_right_commands(services: dict[str, Any]) -> None:
    for name, command in AIRFLOW_COMMANDS.items():
        assert services[name]["command"] == command, name
    init = " ".join(str(part) for part in services["airflow-init"]["command"])
    assert "airflow db migrate" in init


def test_services_wait_for_what_they_need(services: dict[str, Any]) -> None:
    for name in AIRFLOW_COMMANDS:
        needs = services[name]["depends_on"]
        assert needs["postgres"]["condition"] == "service_healthy", name
        assert needs["airflow-init"]["condition"] == "service_completed_successfully", name
        assert services[name].get("healthcheck"), f"{name} needs a health check"
    scheduler = services["airflow-scheduler"]["depends_on"]
    assert scheduler["spark-master"]["condition"] == "service_healthy"
    assert scheduler["spark-connect"]["condition"] == "service_healthy"
    assert scheduler["scylla-3"]["condition"] == "service_healthy"
    for name, service in services.items():
        for target, rule in (service.get("depends_on") or {}).items():
            assert target in services, f"{name} depends on unknown {target}"
            if rule["condition"] == "service_healthy":
                assert services[target].get("healthcheck"), f"{target} has no health check"


def fake_host(root: Path, aio_max: int, memory_gb: int, cpus: int, disk_gb: int = 100) -> Path:
    """A ``/proc`` with what the host check reads, and a ``bin/df`` that reports
    ``disk_gb`` free: the check must not depend on the test machine's own disk."""
    (root / "bin").mkdir(parents=True)
    df = root / "bin" / "df"
    df.write_text(
        "#!/bin/sh\n"
        'echo "Filesystem 1048576-blocks Used Available Capacity Mounted on"\n'
        f'echo "fake {disk_gb * 2048} {disk_gb * 1024} {disk_gb * 1024} 50% /"\n'
    )
    df.chmod(0o755)
    (root / "sys" / "fs").mkdir(parents=True)
    (root / "sys" / "fs" / "aio-max-nr").write_text(f"{aio_max}\n")
    (root / "sys" / "fs" / "aio-nr").write_text("0\n")
    (root / "meminfo").write_text(f"MemTotal: {memory_gb * 1024 * 1024} kB\n")
    (root / "cpuinfo").write_text("".join(f"processor\t: {i}\n\n" for i in range(cpus)))
    return root


def test_scylla_starts_only_on_a_host_that_can_run_it(
    services: dict[str, Any], tmp_path: Path
) -> None:
    """The host check runs first and names what ScyllaDB lacks (fs.aio-max-nr: 11026
    contexts per shard), with the fix; memory, CPUs and disk are warnings."""
    check = services["host-check"]
    first = services[SCYLLA_NODES[0]]["depends_on"]["host-check"]
    assert first["condition"] == "service_completed_successfully"
    env = env_of(check)
    smp = re.search(r"--smp (\d+)", " ".join(map(str, services[SCYLLA_NODES[0]]["command"])))
    assert smp and env == {"SCYLLA_NODES": str(len(SCYLLA_NODES)), "SCYLLA_SMP": smp.group(1)}
    mounts = {target: source for source, target in bind_mounts(check)}
    script_path = check["entrypoint"][-1]
    folder = next(t for t in mounts if script_path.startswith(t + "/"))
    script = REPO / mounts[folder] / Path(script_path).name

    def run(host: Path) -> subprocess.CompletedProcess[str]:
        variables = {
            "PATH": f"{host / 'bin'}:/usr/bin:/bin",
            "HOST_PROC": str(host),
            "DATA_DIR": str(tmp_path),
        }
        return subprocess.run(
            ["bash", str(script)], env={**variables, **env}, capture_output=True, text=True
        )

    enough = run(fake_host(tmp_path / "enough", 65536, 16, 4))
    assert enough.returncode == 0 and enough.stderr == "", enough.stderr
    short = run(fake_host(tmp_path / "short", 30000, 2, 1))
    assert short.returncode == 1
    assert "fs.aio-max-nr: 30000 asynchronous I/O contexts free, ScyllaDB needs 33078" in (
        short.stderr
    )
    assert "sudo sysctl -w fs.aio-max-nr=1048576" in short.stderr
    assert "warning: memory: 2048 MB" in short.stderr and "warning: CPUs: 1" in short.stderr
    low_memory = run(fake_host(tmp_path / "low_memory", 65536, 2, 4))
    assert low_memory.returncode == 0 and "warning: memory" in low_memory.stderr
    low_disk = run(fake_host(tmp_path / "low_disk", 65536, 16, 4, disk_gb=4))
    assert low_disk.returncode == 0
    assert low_disk.stderr == (
        "host-check: warning: disk: 4096 MB free, the stack needs 10240 MB;"
        " free some space for Docker\n"
    )


def test_airflow_components_share_one_api_secret_key_and_the_task_logs(
    compose: dict[str, Any], services: dict[str, Any]
) -> None:
    """The API server reads a running task's log from the component that runs it, over
    HTTP signed with ``[api] secret_key``, and a finished task's from the logs folder:
    one key for every component, and one volume for their logs."""
    keys = {}
    for name, service in airflow_services(services).items():
        keys[name] = env_of(service).get("AIRFLOW__API__SECRET_KEY")
        assert "airflow-logs:/opt/airflow/logs" in service["volumes"], name
    assert set(keys) >= set(AIRFLOW_COMMANDS) and len(set(keys.values())) == 1, keys
    assert next(iter(keys.values())), "the secret key is empty"
    assert "airflow-logs" in compose["volumes"]
    init = " ".join(str(part) for part in services["airflow-init"]["command"])
    assert "/opt/airflow/logs" in init.split("chown", 1)[1]  # writable by AIRFLOW_UID


def test_api_server_health_check_is_the_monitor_endpoint(services: dict[str, Any]) -> None:
    check = " ".join(services["airflow-api-server"]["healthcheck"]["test"])
    assert "/api/v2/monitor/health" in check
    assert (
        env_of(services["airflow-scheduler"])["AIRFLOW__CORE__EXECUTION_API_SERVER_URL"]
        == "http://airflow-api-server:8080/execution/"
    )


def test_ports_listen_on_loopback_only(services: dict[str, Any]) -> None:
    for name, service in services.items():
        for port in service.get("ports") or ():
            assert str(port).startswith("127.0.0.1:"), f"{name} publishes {port} publicly"


# --- settings ---------------------------------------------------------------------------


def test_cdcgen_settings_are_exactly_those_the_pipeline_reads(services: dict[str, Any]) -> None:
    read = settings_read_by_the_pipeline()
    assert "CDCGEN_CONTACT_POINTS" in read  # the recorder works
    for name in (*airflow_services(services), "spark-master", "spark-worker", "spark-connect"):
        given = {k for k in env_of(services[name]) if k.startswith("CDCGEN_")}
        assert given <= read, f"{name} sets settings nothing reads: {sorted(given - read)}"
        missing = read - given - OPTIONAL_SETTINGS
        assert not missing, f"{name} leaves {sorted(missing)} at the sandbox default"


def test_settings_point_at_scyllas_real_tables(services: dict[str, Any]) -> None:
    env = env_of(services["airflow-scheduler"])
    config = PipelineConfig.from_env(env)
    assert env["CDCGEN_SOURCE_KEYSPACE_PREFIX"] == ""
    assert config.source_schema == SourceSchema.scylla()
    assert config.clock_source == "cql"
    assert config.target_keyspace == "system_distributed"
    assert config.checkpoint_keyspace == "cdcgen_state"  # no tables of ours in ScyllaDB's
    assert config.contact_points == SCYLLA_NODES
    assert config.source_mode.value == "raft"


def test_lake_and_reports_are_shared_mounts(services: dict[str, Any]) -> None:
    for name in ("airflow-scheduler", "airflow-api-server", "spark-worker"):
        service = services[name]
        config = PipelineConfig.from_env(env_of(service))
        mounts = dict(bind_mounts(service))
        assert str(config.lake_path) == mounts["lake"], name
        assert str(config.report_dir) == mounts["reports"], name


# --- the Spark Connect server: who reaches it, what it holds ------------------------------


def test_compose_refuses_to_start_without_the_connect_token(compose_check: Path) -> None:
    from cdcgen_dev.compose_check import check

    done = check(COMPOSE, {"AIRFLOW_UID": "50000"}, binary=compose_check)
    assert done.returncode != 0, "compose would start a Spark Connect server with no token"
    assert "CDCGEN_SPARK_CONNECT_TOKEN" in done.stderr


@pytest.fixture(scope="module")
def loaded(compose_check: Path) -> dict[str, Any]:
    """The project as compose would run it: anchors merged, ``.env`` interpolated."""
    from cdcgen_dev.compose_check import check

    done = check(COMPOSE, DOTENV, binary=compose_check)
    assert done.returncode == 0, done.stderr
    project: dict[str, Any] = json.loads(done.stdout)
    return project


def loaded_env(loaded: Mapping[str, Any], name: str) -> dict[str, str]:
    env = loaded["services"][name].get("environment") or {}
    return {str(k): "" if v is None else str(v) for k, v in env.items()}


def test_the_connect_server_gets_no_airflow_setting_and_no_credential_but_its_token(
    loaded: dict[str, Any],
) -> None:
    from cdcgen.spark_runtime.connect_server import withheld
    from cdcgen.spark_runtime.connect_settings import TOKEN_ENV, SparkConnectSettings

    env = loaded_env(loaded, "spark-connect")
    assert not [name for name in env if name.startswith("AIRFLOW")]
    assert [name for name in env if withheld(name)] == [TOKEN_ENV]
    token = DOTENV[TOKEN_ENV]
    assert SparkConnectSettings.from_env(env).required_secret().get_secret_value() == token
    # Its token reaches only those that present it: the Airflow components, not the
    # Spark master and worker (every job there could read it) nor the init job.
    for name in AIRFLOW_COMMANDS:
        assert loaded_env(loaded, name)[TOKEN_ENV] == token, name
    for name in ("spark-master", "spark-worker", "airflow-init"):
        assert TOKEN_ENV not in loaded_env(loaded, name), name


def test_the_spark_daemons_get_the_pipeline_s_settings_and_none_of_airflow_s(
    loaded: dict[str, Any],
) -> None:
    """Executors of a submitted job inherit the Spark worker's environment: the Fernet
    key, the JWT secret, the database URL and the connections must not be in it."""
    from cdcgen.spark_runtime.connect_server import withheld

    for name in ("spark-master", "spark-worker"):
        env = loaded_env(loaded, name)
        assert not [v for v in env if v.startswith("AIRFLOW")], name
        assert not [v for v in env if withheld(v)], name
        assert env["CDCGEN_LAKE_PATH"] == "/opt/cdcgen/lake", name


def test_the_connect_server_binds_its_service_address_and_the_tasks_reach_it_there(
    loaded: dict[str, Any],
) -> None:
    from urllib.parse import urlparse

    from cdcgen.spark_runtime.connect_channel import AUTHORIZATION, channel_builder
    from cdcgen.spark_runtime.connect_settings import SparkConnectSettings
    from cdcgen.spark_runtime.session import JobKind, remote_for

    server = loaded["services"]["spark-connect"]
    host = SparkConnectSettings.from_env(loaded_env(loaded, "spark-connect")).host
    assert host == server["hostname"] == "spark-connect"  # not 0.0.0.0, not the default
    assert not server.get("ports"), "the Connect server must not be published on the host"
    args = [str(a) for a in server["command"]]
    assert args[:3] == ["python", "-m", "cdcgen.spark_runtime.connect_server"]
    assert "--host" not in args  # the address is the setting above
    port = args[args.index("--port") + 1]
    assert " ".join(server["healthcheck"]["test"]).count(f"('{host}', {port})") == 1
    scheduler = loaded_env(loaded, "airflow-scheduler")
    url = remote_for(JobKind.GENERATION_EXTRACT, scheduler)
    assert url is not None
    parsed = urlparse("http" + url[2:])
    assert (parsed.hostname, str(parsed.port)) == (host, port)
    # The tasks' channel takes that URL and token: a header to that host, no TLS asked.
    token = SparkConnectSettings.from_env(scheduler).required_secret()
    builder = channel_builder(url, token)
    assert (AUTHORIZATION, f"Bearer {token.get_secret_value()}") in builder.metadata()
    assert not builder.secure


# --- connections ------------------------------------------------------------------------


def test_connections_are_the_ones_the_dags_use(services: dict[str, Any]) -> None:
    used = conn_ids_used_by_dags()
    assert {connections.SOURCE_CONN_ID, connections.SPARK_CONN_ID} <= used
    for name in airflow_services(services):
        defined = {
            k.removeprefix("AIRFLOW_CONN_").lower()
            for k in env_of(services[name])
            if k.startswith("AIRFLOW_CONN_")
        }
        assert defined == used, f"{name}: defines {sorted(defined)}, DAGs use {sorted(used)}"


def test_source_connection_configures_the_pipeline(services: dict[str, Any]) -> None:
    from cdcgen.airflow.hooks import EXTRA_SETTINGS, config_from_connection

    env = env_of(services["airflow-scheduler"])
    conn = json.loads(env[connections.env_var_name(connections.SOURCE_CONN_ID)])
    assert conn["conn_type"] == "cassandra"
    assert set(conn["extra"]) <= set(EXTRA_SETTINGS)
    config = config_from_connection(conn["host"], conn["port"], conn["extra"], env=env)
    assert config.contact_points == SCYLLA_NODES
    assert config.source_schema == SourceSchema.scylla()
    assert config.clock_source == "cql"
    assert conn == connections.source_connection(SCYLLA_NODES, 9042, conn["extra"])


def test_spark_connection_is_the_compose_master(
    services: dict[str, Any], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from airflow.providers.apache.spark.hooks.spark_submit import SparkSubmitHook

    env = env_of(services["airflow-scheduler"])
    name = connections.env_var_name(connections.SPARK_CONN_ID)
    monkeypatch.setenv("AIRFLOW_HOME", str(tmp_path))
    monkeypatch.setenv(name, env[name])
    master = SparkSubmitHook(conn_id=connections.SPARK_CONN_ID)._connection["master"]
    args = [str(a) for a in services["spark-master"]["command"]]
    host, port = args[args.index("--host") + 1], args[args.index("--port") + 1]
    assert master == f"spark://{host}:{port}" == f"spark://spark-master:{port}"
    worker = [str(a) for a in services["spark-worker"]["command"]]
    assert "org.apache.spark.deploy.worker.Worker" in worker and master in worker
    assert "org.apache.spark.deploy.master.Master" in args


# --- paths ------------------------------------------------------------------------------


def test_mounted_sources_exist_and_sit_where_the_package_expects_them(
    services: dict[str, Any],
) -> None:
    ignored = (REPO / ".gitignore").read_text().split()
    for name, service in services.items():
        for source, target in bind_mounts(service):
            if source in RUNTIME_DIRS:
                assert f"/{source}/" in ignored, f"{source}/ must be git-ignored"
            else:
                assert (REPO / source).exists(), f"{name} mounts missing ./{source}"
            if target.startswith(CONTAINER_ROOT):
                assert target == f"{CONTAINER_ROOT}/{source}", f"{name}: {source} -> {target}"


def test_airflow_reads_the_mounted_dags_and_the_installed_provider(
    services: dict[str, Any],
) -> None:
    """The image installs the provider's wheel as a team would: Airflow gets the report
    plugin from the provider, so no service mounts or names a plugins folder of ours, and
    no source of the package is mounted over what the wheel installed."""
    dockerfile = (REPO / "deploy/airflow.Dockerfile").read_text()
    assert re.search(r"^RUN pip wheel .* /home/airflow/cdcgen$", dockerfile, flags=re.M)
    assert re.search(r'"\$\(ls /home/airflow/dist/cdcgen-\*\.whl\)\[stack\]"', dockerfile)
    assert "-e " not in dockerfile, "an editable install is a checkout, not the provider"
    for name, service in airflow_services(services).items():
        env, mounts = env_of(service), dict(bind_mounts(service))
        assert env["AIRFLOW__CORE__DAGS_FOLDER"] == mounts["dags"], name
        assert "AIRFLOW__CORE__PLUGINS_FOLDER" not in env, name
        assert "postgresql" in env["AIRFLOW__DATABASE__SQL_ALCHEMY_CONN"]
        assert "@postgres:" in env["AIRFLOW__DATABASE__SQL_ALCHEMY_CONN"]
    for name, service in services.items():
        sources = {source for source, _ in bind_mounts(service)}
        assert not sources & {"plugins", "spark", "expectations"}, name
    assert (REPO / "dags" / "cdc_generations.py").exists()


def test_scheduler_runs_the_preloading_local_executor_the_dev_stack_runs(
    services: dict[str, Any], tmp_path: Path
) -> None:
    """Airflow imports the executor by this path: it must exist and be a LocalExecutor."""
    from airflow.executors.executor_loader import ExecutorLoader
    from airflow.executors.executor_utils import ExecutorName
    from airflow.executors.local_executor import LocalExecutor

    from cdcgen.airflow.executor import PreloadingLocalExecutor
    from cdcgen_dev.devstack.stack import AirflowStack, StackSettings

    path = env_of(services["airflow-scheduler"])["AIRFLOW__CORE__EXECUTOR"]
    loaded, _ = ExecutorLoader.import_executor_cls(ExecutorName(module_path=path))
    assert loaded is PreloadingLocalExecutor
    assert issubclass(PreloadingLocalExecutor, LocalExecutor)
    stack = AirflowStack(StackSettings(base=tmp_path))  # writes its config there
    assert stack.env()["AIRFLOW__CORE__EXECUTOR"] == path


def test_spark_jobs_are_files_of_the_installed_package(services: dict[str, Any]) -> None:
    """The DAGs submit the job modules' own files, so the image that installed the wheel
    has them on the driver (the scheduler) and the executors (the worker) alike."""
    from cdcgen.airflow.spark_jobs import CHANGES_EXTRACT, GENERATION_EXTRACT, REPLICATION_BOOTSTRAP
    from cdcgen.spark_runtime.shipping import package_dir

    for job in (GENERATION_EXTRACT, CHANGES_EXTRACT, REPLICATION_BOOTSTRAP):
        application = Path(job.application)
        assert application.is_file() and application.is_relative_to(package_dir()), job
    for name in ("airflow-scheduler", "spark-worker"):
        assert services[name]["image"] == services["airflow-scheduler"]["image"], name
