"""Build the JVM command line for one node and start it detached.

This replaces Cassandra's bin/cassandra + conf/cassandra-env.sh + jvm*.options,
which are not in the Maven jars. Flags follow conf/jvm-server.options and
conf/jvm17-server.options of Cassandra 5.0, trimmed for a small test machine.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from functools import cache
from pathlib import Path

from cdcgen_dev.cassandra.errors import SandboxError
from cdcgen_dev.cassandra.jars import jamm_jar
from cdcgen_dev.cassandra.process import write_pid
from cdcgen_dev.cassandra.topology import NodeSpec

MIN_JAVA = 17
MAX_JAVA = 17
MAIN_CLASS = "org.apache.cassandra.service.CassandraDaemon"
DEFAULT_HEAP = "1G"
# Cassandra mlockall()s its memory at start-up (it succeeds as root), which
# makes every committed heap page resident. Committing only this much up front
# keeps an idle node's resident memory low; the heap grows on demand.
INITIAL_HEAP_MB = 256

# Popen objects of nodes this process started. Holding them keeps Python from
# warning "subprocess is still running" when they are garbage collected; the
# exited children are reaped by process.is_running.
_children: dict[int, subprocess.Popen[bytes]] = {}

# Java 17 module access Cassandra 5.0 needs (conf/jvm17-server.options); without
# them start-up dies with InaccessibleObjectException.
_ADD_EXPORTS = (
    "java.base/jdk.internal.misc",
    "java.base/java.lang.ref",
    "java.management.rmi/com.sun.jmx.remote.internal.rmi",
    "java.management/com.sun.jmx.remote.security",
    "java.rmi/sun.rmi.registry",
    "java.rmi/sun.rmi.server",
    "java.sql/java.sql",
    "jdk.unsupported/sun.misc",
    # Only on a full JDK (see _module_flags).
    "jdk.compiler/com.sun.tools.javac.file",
    "jdk.attach/sun.tools.attach",
)
_ADD_OPENS = (
    "java.base/java.io",
    "java.base/java.lang",
    "java.base/java.lang.module",
    "java.base/java.lang.reflect",
    "java.base/java.nio",
    "java.base/java.util",
    "java.base/jdk.internal.loader",
    "java.base/jdk.internal.math",
    "java.base/jdk.internal.module",
    "java.base/jdk.internal.ref",
    "java.base/jdk.internal.reflect",
    "java.base/jdk.internal.util.jar",
    "java.base/sun.nio.ch",
    "jdk.management/com.sun.management.internal",
    "jdk.compiler/com.sun.tools.javac",
)

# Test-speed switches (CassandraRelevantProperties): no gossip-settle wait, a
# 1 s ring delay, no fsync of the system keyspace or commit log, and a 0.5 s
# (not 2 s) pause after announcing shutdown - peers are on the same host.
_FAST_START = (
    "-Dcassandra.skip_wait_for_gossip_to_settle=0",
    "-Dcassandra.ring_delay_ms=1000",
    "-Dcassandra.unsafesystem=true",
    "-Dcassandra.skip_sync=true",
    "-Dcassandra.shutdown_announce_in_ms=500",
)


def find_java() -> Path:
    """``$JAVA_HOME/bin/java`` if set, else ``java`` on PATH."""
    java_home = os.environ.get("JAVA_HOME")
    if java_home and (Path(java_home) / "bin" / "java").is_file():
        return Path(java_home) / "bin" / "java"
    found = shutil.which("java")
    if found is None:
        raise SandboxError(
            f"Java {MIN_JAVA} is needed to run Cassandra but `java` is not on PATH and "
            "JAVA_HOME is unset (Debian: apt-get install openjdk-17-jre-headless)"
        )
    return Path(found)


def java_major_version(java: Path) -> int:
    """Major version from ``java -version`` (e.g. 17 from ``"17.0.15"``)."""
    output = subprocess.run(
        [str(java), "-version"], capture_output=True, text=True, check=False
    ).stderr
    match = re.search(r'version "(\d+)(?:\.(\d+))?', output)
    if match is None:
        raise SandboxError(f"cannot read the Java version from `{java} -version`: {output!r}")
    major = int(match.group(1))
    return int(match.group(2) or 0) if major == 1 else major


def check_java() -> Path:
    """The java executable, or a clear error if it is missing or too old."""
    java = find_java()
    major = java_major_version(java)
    if major < MIN_JAVA:
        raise SandboxError(
            f"the sandbox runs Cassandra 5.0 on Java {MIN_JAVA}; {java} is Java {major} "
            "(set JAVA_HOME to a Java 17 installation)"
        )
    if major > MAX_JAVA:
        # 5.0 supports Java 11 and 17 only; on 18+ its security manager and
        # module flags fail at start-up with a stack trace instead.
        raise SandboxError(
            f"Cassandra 5.0 supports Java 11 and 17, not {major} ({java}); "
            "set JAVA_HOME to a Java 17 installation"
        )
    return java


@cache
def _java_modules(java: Path) -> frozenset[str]:
    """Modules of this runtime, so a JRE without jdk.compiler gets no warnings."""
    listing = subprocess.run(
        [str(java), "--list-modules"], capture_output=True, text=True, check=False
    ).stdout
    return frozenset(line.split("@", 1)[0] for line in listing.splitlines() if line)


def _module_flags(java: Path) -> list[str]:
    modules = _java_modules(java)
    flags: list[str] = []
    for option, packages in (("--add-exports", _ADD_EXPORTS), ("--add-opens", _ADD_OPENS)):
        for package in packages:
            if package.split("/", 1)[0] in modules:
                flags.append(f"{option}={package}=ALL-UNNAMED")
    return flags


def heap_size() -> str:
    """Heap per node: $CDCGEN_CASSANDRA_HEAP (e.g. ``512M``), default 1G."""
    return os.environ.get("CDCGEN_CASSANDRA_HEAP", DEFAULT_HEAP)


def _megabytes(size: str) -> int:
    """``"1G"`` -> 1024, ``"512M"`` -> 512 (the JVM's -Xmx suffixes)."""
    match = re.fullmatch(r"(\d+)([kKmMgG]?)", size.strip())
    if match is None:
        raise SandboxError(f"bad heap size {size!r}; use e.g. 512M or 1G")
    number, unit = int(match.group(1)), match.group(2).lower()
    return {"k": number // 1024, "m": number, "g": number * 1024, "": number // 2**20}[unit]


def initial_heap(heap: str) -> str:
    return f"{min(INITIAL_HEAP_MB, _megabytes(heap))}M"


def jvm_command(
    node: NodeSpec,
    java: Path,
    lib: Path,
    *,
    heap: str | None = None,
    properties: tuple[str, ...] = (),
) -> list[str]:
    """The full ``java ... CassandraDaemon`` argv for ``node`` (``properties``: more -D)."""
    heap = heap or heap_size()
    return [
        str(java),
        f"-Xms{initial_heap(heap)}",
        f"-Xmx{heap}",
        "-Xss256k",
        "-XX:+UseG1GC",
        "-XX:+ParallelRefProcEnabled",
        "-XX:MaxTenuringThreshold=1",
        "-XX:G1RSetUpdatingPauseTimePercent=5",
        "-XX:MaxGCPauseMillis=300",
        "-XX:InitiatingHeapOccupancyPercent=70",
        "-XX:+ExitOnOutOfMemoryError",
        # No hsperfdata file in /tmp; jcmd/jps then do not see the JVM.
        "-XX:+PerfDisableSharedMem",
        "-Djava.net.preferIPv4Stack=true",
        "-Djdk.attach.allowAttachSelf=true",
        "-Dchronicle.analytics.disable=true",
        "-Dio.netty.tryReflectionSetAccessible=true",
        "-Dio.netty.allocator.useCacheForAllThreads=true",
        "-Dio.netty.allocator.maxOrder=11",
        *_module_flags(java),
        f"-javaagent:{jamm_jar(lib)}",
        f"-Dcassandra.config={node.yaml_path.as_uri()}",
        f"-Dlogback.configurationFile={node.logback_path}",
        f"-Dcassandra.logdir={node.log_dir}",
        f"-Dcassandra.storagedir={node.root}",
        # Keep stdout open (the daemon closes it otherwise), so it lands in stdout.log.
        "-Dcassandra-foreground=yes",
        f"-Dcassandra.triggers_dir={node.triggers_dir}",
        f"-Dcassandra.jmx.local.port={node.jmx_port}",
        f"-Dcom.sun.management.jmxremote.rmi.port={node.jmx_port}",
        # Native libraries are unpacked here; /tmp may be mounted noexec.
        f"-Djna.tmpdir={node.tmp_dir}",
        f"-Djava.io.tmpdir={node.tmp_dir}",
        *_FAST_START,
        *properties,
        "-cp",
        f"{node.conf_dir}:{lib}/*",
        MAIN_CLASS,
    ]


def nodetool_command(node: NodeSpec, java: Path, lib: Path, *args: str) -> list[str]:
    """``nodetool -h 127.0.0.1 -p <node's JMX port> ARGS`` as a java argv.

    The Maven jars have no bin/nodetool; the tool needs the same module flags.
    """
    return [
        str(java),
        "-Xmx128M",
        *_module_flags(java),
        f"-Dlogback.configurationFile={node.logback_path}",
        f"-Dcassandra.logdir={node.tmp_dir}",
        "-cp",
        f"{node.conf_dir}:{lib}/*",
        "org.apache.cassandra.tools.NodeTool",
        "-h",
        "127.0.0.1",
        "-p",
        str(node.jmx_port),
        *args,
    ]


def spawn(node: NodeSpec, command: list[str]) -> int:
    """Start the JVM in its own session so it outlives the CLI; record its pid.

    stdout/stderr go to the node's stdout.log: JVM warnings and start-up
    failures before logback is configured are only visible there.
    """
    node.log_dir.mkdir(parents=True, exist_ok=True)
    with node.stdout_log.open("ab") as out:
        proc = subprocess.Popen(
            command,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            cwd=node.root,
            start_new_session=True,
            close_fds=True,
        )
    _children[proc.pid] = proc
    write_pid(node.pid_file, proc.pid)
    return proc.pid
