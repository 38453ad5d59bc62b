"""Share the sandbox between concurrent users: test sessions, xdist workers, the CLI.

``single`` and ``cluster`` both put node 1 on 127.0.0.1:9042 (and ``cluster`` and
``second`` both bind 127.0.0.2), so a user that needs a topology has to stop a running
one that conflicts with it (:func:`~cdcgen_dev.cassandra.topology.conflicting`) - but
never while another live process is using it. Each user holds a *lease* on the
topology it uses: a file ``<state>/leases/<topology>.<pid>``, void once that pid is
gone. A user that needs a topology while a conflicting one is leased by someone else
waits; ``single`` and ``second`` do not conflict, so leasing one never waits for the other.

Whether a topology may be stopped when its last lessee leaves depends on who
started it: ``use`` marks a topology it started with ``<topology>.auto``; a
person's ``cdcgen sandbox up`` removes the mark (:func:`claim_for_user`), so a
sandbox a developer started is reused and left running. If a session had to
stop a developer's sandbox to run a conflicting topology, it starts it again at the
end.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from cdcgen_dev.cassandra.cluster import Sandbox, running_topology, topology_runs
from cdcgen_dev.cassandra.errors import SandboxError
from cdcgen_dev.cassandra.leases import auto_marker, lease_dir, lease_file, lessees
from cdcgen_dev.cassandra.topology import conflicting, default_state_dir
from cdcgen_dev.locking import file_lock

DEFAULT_WAIT = float(os.environ.get("CDCGEN_SANDBOX_WAIT", "900"))


def claim_for_user(name: str, state_dir: Path | None = None) -> None:
    """Mark topology ``name`` as wanted by a person: sessions will not stop it."""
    auto_marker(state_dir or default_state_dir(), name).unlink(missing_ok=True)


class SandboxUser:
    """One process's use of the sandbox; call :meth:`release` when done."""

    def __init__(self, state_dir: Path | None = None, *, wait: float = DEFAULT_WAIT) -> None:
        self.state_dir = state_dir or default_state_dir()
        self.wait = wait
        self.pid = os.getpid()
        self.leased: set[str] = set()
        #: Developers' topologies this user stopped to make room, started again on release.
        self.restore: list[str] = []

    def use(self, nodes: int | str) -> Sandbox:
        """Lease and start (or reuse) a topology; wait until ready.

        ``nodes`` is a node count (1: ``single``, 3: ``cluster``) or a topology name
        (``"second"``).
        """
        sandbox = Sandbox(nodes, state_dir=self.state_dir)
        name = sandbox.topology.name
        self._lease_displacing_others(name)
        if not topology_runs(name, self.state_dir):
            # Marked before it starts: a start that fails half-way (a node left running)
            # is still this session's to stop, never restored as a developer's.
            self._marker(name).touch()
        if sandbox.up().started:
            self._marker(name).touch()
        return sandbox

    def use_running(self, default_nodes: int = 1) -> Sandbox:
        """Lease whichever topology is running, as it is; else start ``default_nodes``.

        For callers that work on either topology (end-to-end tests, the demo):
        they neither stop a cluster someone left running nor start a second one.
        """
        with file_lock(self._lock_path()):
            running = running_topology(self.state_dir)
            if running is not None:
                self._take(running)
        if running is None:
            return self.use(default_nodes)
        sandbox = self._sandbox(running)
        sandbox.up()
        return sandbox

    def release(self) -> None:
        """Drop all leases; stop what a session started and nobody uses any more."""
        for name in sorted(self.leased):
            self._release(name)
        for name in self.restore:
            with file_lock(self._lock_path()):
                if not any(topology_runs(other, self.state_dir) for other in conflicting(name)):
                    self._sandbox(name).up()
        self.restore = []

    def _lease_displacing_others(self, wanted: str) -> None:
        """Take a lease on ``wanted`` once no one else leases a topology conflicting with it.

        Leases, not running processes, decide: another user may hold a lease on
        a topology it has not started yet. Conflicting topologies that run, ours
        included, are stopped (e.g. the ``second`` node before the ``cluster`` starts).
        """
        deadline = time.monotonic() + self.wait
        while True:
            with file_lock(self._lock_path()):
                holders = {
                    name: pids for name in conflicting(wanted) if (pids := self._others(name))
                }
                if not holders:
                    self._take(wanted)
                    for name in conflicting(wanted):
                        if topology_runs(name, self.state_dir):
                            self._displace(name)
                    return
            if time.monotonic() > deadline:
                raise SandboxError(
                    f"another sandbox topology is still in use ({holders}, topology: pids) "
                    f"after {self.wait:.0f}s; the {wanted!r} one cannot run beside it"
                )
            time.sleep(2.0)

    def _displace(self, name: str) -> None:
        """Stop topology ``name`` (leased by nobody else) to make room."""
        if not self._marker(name).exists() and name not in self.restore:
            self.restore.append(name)  # a developer's sandbox: bring it back afterwards
        self._marker(name).unlink(missing_ok=True)
        self.leased.discard(name)
        self._lease_file(name).unlink(missing_ok=True)
        self._sandbox(name).down()

    def _release(self, name: str) -> None:
        with file_lock(self._lock_path()):
            self._lease_file(name).unlink(missing_ok=True)
            self.leased.discard(name)
            if not lessees(self.state_dir, name) and self._marker(name).exists():
                self._sandbox(name).down()
                self._marker(name).unlink(missing_ok=True)

    def _sandbox(self, name: str) -> Sandbox:
        return Sandbox(name, state_dir=self.state_dir)

    def _take(self, name: str) -> None:
        lease_dir(self.state_dir).mkdir(parents=True, exist_ok=True)
        self._lease_file(name).touch()
        self.leased.add(name)

    def _others(self, name: str) -> list[int]:
        return [pid for pid in lessees(self.state_dir, name) if pid != self.pid]

    def _lease_file(self, name: str) -> Path:
        return lease_file(self.state_dir, name, self.pid)

    def _marker(self, name: str) -> Path:
        return auto_marker(self.state_dir, name)

    def _lock_path(self) -> Path:
        # Not the state dir's .lock: Sandbox.up/down take that one themselves.
        return self.state_dir / ".leases.lock"
