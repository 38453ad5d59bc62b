"""Before a run: can the pipeline do its work with the settings it has? `cdcgen check`, and
the Test button of the connection form (the source cluster's checks only).

A model of results, then the probes, each one check. A probe never raises: whatever
went wrong becomes a failed check naming it, so one failure does not hide the next and
the command prints every line. What each probe asks:

* connection: a session with the configured access (credentials, TLS), and which
  cluster and release answered;
* source mode: the configured mode's generation metadata tables, each read (one row:
  ``SELECT ... LIMIT 1``, so a missing table or a refused ``SELECT`` is named), then
  the generations listed as the pipeline lists them. When the configured mode holds
  none, the other modes are asked too and the one that holds generations is named;
* CDC tables: the tables the changes pipeline would extract (the connection's
  ``cdc_tables``, else every CDC-enabled table), with their CDC TTL;
* log tables: one row read from each CDC log table;
* target and state keyspaces: writing is probed by a harmless idempotent write to each
  table of the pipeline's that exists there, a partition deletion at write time 1 (one
  microsecond after the epoch) of a key no run uses: ``DELETE ... USING TIMESTAMP 1``.
  The cluster authorizes it as any write (``MODIFY``), and the tombstone shadows
  nothing, since every cell a run writes is stamped later, so no reader ever sees a
  difference and doing it again changes nothing. ``LIST PERMISSIONS`` is not used: the
  allow-all authorizer refuses the statement, an anonymous session may not ask it, and
  its grants (on all keyspaces, a keyspace, a table, through other roles) would still
  have to be matched to tables here, while the write is authorized exactly as a run's
  writes are, by whatever authorizer the cluster runs. A table not created yet is not
  probed: the first run creates it, which needs ``CREATE``, a permission no write can
  test without creating something;
* Spark: the configured master (``CDCGEN_SPARK_MASTER``): a local one needs PySpark and
  a JVM that starts (``java -version``); a ``spark://`` or ``k8s://`` master, and the
  Spark Connect server (``CDCGEN_SPARK_REMOTE``), must answer on their port;
* lake: a probe object written, read back and deleted through the lake's store (a
  folder or S3), where the runs write.
"""

from __future__ import annotations

import importlib.util
import logging
import shutil
import socket
import subprocess
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlparse

from pydantic import BaseModel, ConfigDict

from cdcgen.core.errors import ExitCode
from cdcgen.core.generation import SourceMode
from cdcgen.core.time import iso_millis
from cdcgen.schema import TABLET_STREAMS, TABLET_TIMESTAMPS, Table

if TYPE_CHECKING:
    from cdcgen.adapters.cql import CqlClient
    from cdcgen.config import PipelineConfig
    from cdcgen.core.cdc_log import CdcTable
    from cdcgen.spark_runtime.spark_settings import SparkSettings

log = logging.getLogger(__name__)

# --- the model --------------------------------------------------------------------------


class CdcTableTtl(BaseModel):
    """A CDC-enabled table and its CDC TTL (0: its log rows never expire)."""

    model_config = ConfigDict(frozen=True)

    table: str
    ttl_seconds: int


class CheckResult(BaseModel):
    """One check: what was checked, whether it passed, what was found or went wrong."""

    model_config = ConfigDict(frozen=True)

    check: str
    ok: bool
    detail: str
    #: The CDC tables found (the ``cdc tables`` check only).
    tables: tuple[CdcTableTtl, ...] | None = None

    def line(self) -> str:
        """``ok    connection: ...`` / ``FAIL  lake: ...``: one line per check."""
        return f"{'ok' if self.ok else 'FAIL':<4}  {self.check}: {self.detail}"


def passed(check: str, detail: str, **more: Any) -> CheckResult:
    return CheckResult(check=check, ok=True, detail=detail, **more)


def failed(check: str, detail: str) -> CheckResult:
    return CheckResult(check=check, ok=False, detail=detail)


class PreflightReport(BaseModel):
    """Every check that ran, in order."""

    model_config = ConfigDict(frozen=True)

    results: tuple[CheckResult, ...]

    @property
    def ok(self) -> bool:
        return all(result.ok for result in self.results)

    @property
    def first_failure(self) -> CheckResult | None:
        return next((result for result in self.results if not result.ok), None)

    @property
    def exit_code(self) -> ExitCode:
        """0 when every check passed, else 1: the command ran, and what it checked failed."""
        return ExitCode.OK if self.ok else ExitCode.FINDINGS


def named_error(exc: BaseException) -> str:
    """An error as a check shows it: its kind and its message."""
    return f"{type(exc).__name__}: {exc}"


def guarded(check: str, probe: Callable[[], CheckResult]) -> CheckResult:
    """``probe()``, any error it raises a failed ``check`` naming that error."""
    try:
        return probe()
    except Exception as exc:
        log.debug("check %s failed", check, exc_info=True)
        return failed(check, named_error(exc))


# --- the source cluster -----------------------------------------------------------------

#: The key of every probe write: no run writes under it.
PROBE_KEY = "cdcgen-check"
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)

#: Generation metadata read in each source mode (ScyllaDB's names; the schema maps them).
METADATA_TABLES: dict[SourceMode, tuple[Table, ...]] = {
    SourceMode.RAFT: (Table.TOPOLOGY, Table.CDC_GENERATIONS_V3),
    SourceMode.GOSSIP: (Table.CDC_LOCAL, Table.CDC_GENERATION_DESCRIPTIONS_V2),
    SourceMode.V1: (
        Table.CDC_STREAMS_DESCRIPTIONS_V1,
        Table.CDC_GENERATION_DESCRIPTIONS_V1,
        Table.CDC_LOCAL,
    ),
    SourceMode.TABLETS: (Table.CDC_STREAMS_STATE, Table.CDC_STREAMS_HISTORY),
}

#: A table's partition key columns, each with the value of the probe key.
ProbeKey = tuple[tuple[str, Any], ...]
_BY_PARTITION: ProbeKey = (("keyspace_name", PROBE_KEY), ("table_name", PROBE_KEY))
#: The tables the publication writes in the target keyspace, with a probe key of each.
VNODE_TARGET: dict[str, ProbeKey] = {
    Table.CDC_STREAMS_DESCRIPTIONS_V2.name_only: (("time", EPOCH),),
    Table.CDC_GENERATION_TIMESTAMPS.name_only: (("key", PROBE_KEY),),
}
TABLET_TARGET: dict[str, ProbeKey] = {
    TABLET_STREAMS: _BY_PARTITION,
    TABLET_TIMESTAMPS: _BY_PARTITION,
}


def state_tables() -> dict[str, ProbeKey]:
    """The changes pipeline's state tables, with a probe key of each."""
    from cdcgen.adapters.checkpoints import CHECKPOINTS_TABLE, PROGRESS_TABLE

    return {CHECKPOINTS_TABLE: _BY_PARTITION, PROGRESS_TABLE: _BY_PARTITION}


class SourceChecks:
    """The checks of the source cluster, over one connected client."""

    def __init__(self, client: CqlClient, config: PipelineConfig) -> None:
        self.client = client
        self.config = config
        self.found: list[CdcTable] = []

    def connection(self) -> CheckResult:
        row = self.client.execute("SELECT cluster_name, release_version FROM system.local").one()
        where = f"{','.join(self.config.contact_points)}:{self.config.port}"
        return passed(
            "connection",
            f"connected to cluster {row.cluster_name!r} (release {row.release_version}) at "
            f"{where}, {self.client.node_count} node(s)",
        )

    def source_mode(self) -> CheckResult:
        from cdcgen.adapters.generation_sources import source_for
        from cdcgen.adapters.v1_sources import detect_legacy_mode

        check = "source mode"
        mode = SourceMode(self.config.source_mode)
        schema = self.config.source_schema
        for table in METADATA_TABLES[mode]:
            name = schema.name(table)
            try:
                list(self.client.execute(f"SELECT * FROM {name} LIMIT 1"))
            except Exception as exc:
                return failed(check, f"{mode}: cannot read {name}: {self._why(exc)}")
        generations = source_for(self.client, self.config).list_generations()
        if not generations:
            tables = ", ".join(schema.name(t) for t in METADATA_TABLES[mode])
            elsewhere = [str(m) for m in self.modes_with_generations() if m is not mode]
            hint = (
                f"; the source holds {' and '.join(elsewhere)} generations: set "
                "CDCGEN_SOURCE_MODE (the connection's source_mode) to that"
                if elsewhere
                else ""
            )
            return failed(check, f"{mode}: no generation in {tables}{hint}")
        shown = str(mode)
        if mode is SourceMode.V1 and detect_legacy_mode(self.client, schema) is SourceMode.GOSSIP:
            shown = "v1, rewritten to V2 by the upgrade (its generations read as gossip)"
        latest = max(generations)
        if mode is SourceMode.TABLETS:
            count = len({g.table for g in generations})
            what = f"{len(generations)} stream set(s) of {count} table(s)"
        else:
            what = f"{len(generations)} generation(s)"
        return passed(check, f"{shown}: {what}, the latest at {iso_millis(latest.timestamp)}")

    def modes_with_generations(self) -> list[SourceMode]:
        """The source modes under which the source lists generations (what it holds)."""
        from cdcgen.adapters.generation_sources import source_for

        found = []
        for mode in SourceMode:
            try:
                if source_for(
                    self.client, self.config.with_overrides(source_mode=mode)
                ).list_generations():
                    found.append(mode)
            except Exception:  # a mode whose tables are not there
                continue
        return found

    def cdc_tables(self) -> CheckResult:
        from cdcgen.adapters.cdc_tables import CdcCatalog
        from cdcgen.core.cdc_log import TableRef

        check = "cdc tables"
        catalog = CdcCatalog(self.client, self.config.source_schema)
        named = TableRef.parse_list(str(self.config.extra.get("cdc_tables", "")))
        self.found = [catalog.table(ref) for ref in named] if named else catalog.tables()
        if not self.found:
            return failed(
                check,
                "no CDC-enabled table: the changes DAG has nothing to extract (enable CDC "
                "on a table: ALTER TABLE ... WITH cdc = {'enabled': true})",
            )
        listed = ", ".join(
            f"{t.name} (TTL {f'{t.ttl_seconds} s' if t.ttl_seconds else 'none'})"
            for t in self.found
        )
        ttls = tuple(CdcTableTtl(table=t.name, ttl_seconds=t.ttl_seconds) for t in self.found)
        return passed(check, f"{len(self.found)}: {listed}", tables=ttls)

    def log_tables(self) -> CheckResult:
        check = "log tables"
        if not self.found:
            return failed(check, "no CDC table to read the log of")
        for table in self.found:
            name = table.table.qualified_log
            try:
                list(self.client.execute(f"SELECT * FROM {name} LIMIT 1"))
            except Exception as exc:
                return failed(check, f"cannot read {name}: {self._why(exc)}")
        return passed(check, f"read {len(self.found)} CDC log table(s)")

    def target_keyspace(self) -> CheckResult:
        from cdcgen.adapters.publisher import SCYLLA_KEYSPACE

        keyspace = self.config.target_keyspace
        tables = VNODE_TARGET if self.config.source_mode != SourceMode.TABLETS else TABLET_TARGET
        owned = keyspace != SCYLLA_KEYSPACE
        return self._writable("target keyspace", keyspace, tables, owned=owned)

    def state_keyspace(self) -> CheckResult:
        from cdcgen.core.identifiers import STATE_KEYSPACE_SETTING, check_writable_keyspace

        keyspace = self.config.checkpoint_keyspace
        check_writable_keyspace(keyspace, "state keyspace", setting=STATE_KEYSPACE_SETTING)
        return self._writable("state keyspace", keyspace, state_tables(), owned=True)

    def _writable(
        self,
        check: str,
        keyspace: str,
        tables: dict[str, ProbeKey],
        *,
        owned: bool,
    ) -> CheckResult:
        """The probe write of the module doc into each of ``tables`` that exists."""
        from cdcgen.core.identifiers import check_identifier

        check_identifier(keyspace, "keyspace")
        created = self.client.execute(
            "SELECT table_name FROM system_schema.tables WHERE keyspace_name = %s", (keyspace,)
        )
        existing = {row.table_name for row in created}
        missing = sorted(set(tables) - existing)
        if missing and not owned:
            return failed(
                check,
                f"{keyspace} has no {', '.join(missing)}: the cluster creates them itself "
                "(ScyllaDB does), and the pipeline never creates tables in its keyspace",
            )
        probed = []
        for table, key in tables.items():
            if table not in existing:
                continue
            where = " AND ".join(f"{column} = %s" for column, _ in key)
            cql = f"DELETE FROM {keyspace}.{table} USING TIMESTAMP 1 WHERE {where}"
            try:
                self.client.execute(cql, tuple(value for _, value in key))
            except Exception as exc:
                return failed(check, f"cannot write {keyspace}.{table}: {self._why(exc)}")
            probed.append(table)
        if not existing:
            return passed(
                check,
                f"{keyspace} does not exist yet: the first run creates it (which needs the "
                "CREATE permission; not probed)",
            )
        said = f"{keyspace}: may write {', '.join(probed)}" if probed else f"{keyspace}: exists"
        if missing:
            said += f"; {', '.join(missing)} not created yet (the first run creates them)"
        return passed(check, said)

    @staticmethod
    def _why(exc: BaseException) -> str:
        from cassandra import InvalidRequest, Unauthorized

        if isinstance(exc, Unauthorized):
            return f"permission refused ({exc})"
        if isinstance(exc, InvalidRequest):
            return (
                f"{exc} (a wrong keyspace name, CDCGEN_SOURCE_KEYSPACE_PREFIX or "
                "CDCGEN_SOURCE_MODE?)"
            )
        return named_error(exc)

    def run(self) -> list[CheckResult]:
        """Every check of the source, in order, the connection's first."""
        steps = (
            ("connection", self.connection),
            ("source mode", self.source_mode),
            ("cdc tables", self.cdc_tables),
            ("log tables", self.log_tables),
            ("target keyspace", self.target_keyspace),
            ("state keyspace", self.state_keyspace),
        )
        return [guarded(check, probe) for check, probe in steps]


@contextmanager
def _connected(config: PipelineConfig) -> Iterator[CqlClient]:
    from cdcgen.adapters.cql import client_for

    with client_for(config) as client:
        yield client


def check_source(config: PipelineConfig) -> list[CheckResult]:
    """The source cluster's checks (what the connection's Test button runs); when no
    session opens, that failure alone."""
    try:
        with _connected(config) as client:
            return SourceChecks(client, config).run()
    except Exception as exc:
        return [failed("connection", named_error(exc))]


# --- Spark and the lake -------------------------------------------------------------------

CONNECT_PORT = 15002
STANDALONE_PORT = 7077


def endpoints(url: str, scheme: str, default_port: int) -> list[tuple[str, int]]:
    """``(host, port)`` of each master a ``spark://h1:p1,h2:p2``, ``sc://h:p/;...`` or
    ``k8s://https://h:p`` URL names."""
    rest = url[len(scheme) :]
    if scheme == "k8s://":
        inner = urlparse(rest if "://" in rest else f"https://{rest}")
        return [(inner.hostname or "", inner.port or (80 if inner.scheme == "http" else 443))]
    found = []
    for part in rest.split("/", 1)[0].split(","):
        host, _, digits = part.rpartition(":") if ":" in part else (part, "", "")
        found.append((host, int(digits) if digits else default_port))
    return found


def answers(host: str, port: int, timeout: float = 5.0) -> str | None:
    """None when ``host:port`` accepts a TCP connection, else why not."""
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return None
    except OSError as exc:
        return f"{host}:{port} does not answer ({exc.strerror or exc})"


def _any_answers(check: str, what: str, hosts: Sequence[tuple[str, int]]) -> CheckResult:
    problems = []
    for host, port in hosts:
        why = answers(host, port)
        if why is None:
            return passed(check, f"{what} answers at {host}:{port}")
        problems.append(why)
    return failed(check, f"{what}: {'; '.join(problems)}")


def java_command(java_home: Path | None) -> str | None:
    """The ``java`` a local Spark starts: ``$JAVA_HOME``'s, else the PATH's."""
    if java_home is not None and (java_home / "bin" / "java").is_file():
        return str(java_home / "bin" / "java")
    return shutil.which("java")


def _local_spark(check: str, master: str, java_home: Path | None) -> CheckResult:
    if importlib.util.find_spec("pyspark") is None:
        return failed(check, f"master {master}: PySpark is not installed (cdcgen[stack])")
    try:
        pyspark = f"PySpark {version('pyspark')}"
    except PackageNotFoundError:
        pyspark = "PySpark"
    java = java_command(java_home)
    if java is None:
        return failed(check, f"master {master}: no java (set JAVA_HOME, or put java on the PATH)")
    try:
        done = subprocess.run(  # a JVM's start is what a local master needs
            [java, "-version"], capture_output=True, text=True, timeout=60, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return failed(check, f"master {master}: {java} -version: {exc}")
    said = (done.stderr or done.stdout).strip().splitlines()
    if done.returncode != 0:
        return failed(check, f"master {master}: {java} -version: {' '.join(said)[-300:]}")
    return passed(check, f"master {master}: {pyspark}, {said[0] if said else java} starts")


def _master(master: str, java_home: Path | None) -> CheckResult:
    if master.startswith("local"):
        return _local_spark("spark", master, java_home)
    for scheme, port in (("spark://", STANDALONE_PORT), ("k8s://", 443)):
        if master.startswith(scheme):
            return _any_answers("spark", f"master {master}", endpoints(master, scheme, port))
    return passed("spark", f"master {master}: not probed (no port to ask)")


def _connect_server(remote: str) -> CheckResult:
    hosts = endpoints(remote, "sc://", CONNECT_PORT)
    return _any_answers("spark connect", "the Spark Connect server", hosts)


def check_spark(settings: SparkSettings) -> list[CheckResult]:
    """The configured master, and the Spark Connect server when one is set."""
    master, remote = settings.master.strip(), (settings.remote or "").strip()
    results = [guarded("spark", lambda: _master(master, settings.java_home))]
    if remote:
        results.append(guarded("spark connect", lambda: _connect_server(remote)))
    return results


def _lake_writable(lake_path: str) -> CheckResult:
    from cdcgen.adapters.lake_store import LakeLocation

    lake = LakeLocation.of(lake_path)
    probe = lake / f".cdcgen-check-{uuid.uuid4().hex[:12]}"
    data = b"cdcgen check: written, read back and deleted\n"
    try:
        probe.write_bytes(data)
        read = probe.read_bytes()
    finally:
        try:
            probe.remove()
        except Exception:  # the write failed, or the store refuses deletes: named below
            log.debug("cannot delete %s", probe, exc_info=True)
    if read != data:
        return failed("lake", f"{probe} read back other bytes than were written")
    if probe.exists():
        return failed("lake", f"{lake}: the probe object {probe.name} could not be deleted")
    return passed("lake", f"{lake}: writable (a probe object written, read back and deleted)")


def check_lake(config: PipelineConfig) -> CheckResult:
    return guarded("lake", lambda: _lake_writable(config.lake_path))


def check_all(config: PipelineConfig, spark: SparkSettings) -> PreflightReport:
    """Every check of `cdcgen check`: the source cluster's, Spark's and the lake's."""
    return PreflightReport(results=(*check_source(config), *check_spark(spark), check_lake(config)))
