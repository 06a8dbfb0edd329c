"""Open the run's cluster once: connections to every node, then the cluster lock (run/cluster_lock.py).

The ``cluster`` fixture and the mount decision before the plan both open the cluster through
:func:`open_cluster`, so whichever comes first connects and takes the nodes, and nothing is opened
or locked twice. Another run holding the nodes ends this run at once (``pytest.exit``, exit code
:data:`LOCKED_EXIT`), before any check, naming it: no check errors, so no node is sent back.
The lock is given back at the session's end (:class:`LockPlugin`), before the connections close.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

import pytest

from pytest_fabric.run import cluster_lock
from pytest_fabric.run.batches import fan_out
from pytest_fabric.run.cluster import Cluster
from pytest_fabric.run.owner import this_run
from pytest_fabric.run.state import FabricState, get_state
from pytest_fabric.transport.base import Transport
from pytest_fabric.transport.ssh.transport import SSHTransport

__all__ = ["LOCKED_EXIT", "LOCK_KEY", "LockPlugin", "open_cluster"]

#: the exit status of a run stopped because another run holds its nodes (EX_TEMPFAIL: try again later)
LOCKED_EXIT = 75
LOCK_KEY = pytest.StashKey[cluster_lock.ClusterLock]()
MODES = ("stop", "wait", "take", "off")


def _say(config: pytest.Config, line: str) -> None:
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None:
        reporter.ensure_newline()
        reporter.write_line(line, yellow=True)


def open_cluster(config: pytest.Config, state: FabricState, make_transport: Callable[[str], Transport]) -> Cluster:
    """The run's cluster, connected and locked (the first call opens it; later ones return it)."""
    if state.cluster is not None:
        return state.cluster
    cluster = Cluster(state.inventory, state.profile, make_transport, fanout=state.batches.fanout,
                      tools=state.tenant_tools)
    state.cluster = cluster
    cluster.connect()
    mode = cast(cluster_lock.Mode, config.getoption("fabric_lock", "stop") or "stop")
    if mode == "off":
        return cluster
    # Over the SSH transport only: a Slurm job's allocation already holds its nodes (the holder would be
    # one more job step for the run's length), the local transport is this machine (a smoke test), and
    # a transport an extension provides may not run a background command as this one does.
    reachable = [n for n in cluster.nodes if isinstance(cluster.pool.connected(n.name), SSHTransport)]
    try:
        taken = cluster_lock.take_cluster(
            reachable, cluster_lock.this_run(this_run().run), mode=mode,
            fan_out=lambda items, fn: fan_out(items, fn, state.batches.fanout),
            say=lambda line: _say(config, "cluster lock: " + line),
        )
    except cluster_lock.LockRefused as exc:
        pytest.exit(f"cluster lock: {exc}", returncode=LOCKED_EXIT)
    config.stash[LOCK_KEY] = taken
    for note in taken.notes():
        _say(config, note)
    return cluster


class LockPlugin:
    """Gives the nodes back at the session's end, before the connections close; says what was taken over."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.notes: list[str] = []

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        taken = self.config.stash.get(LOCK_KEY, None)
        if taken is None:
            return
        del self.config.stash[LOCK_KEY]
        self.notes = taken.notes()
        state = get_state(self.config)
        if state is not None and state.cluster is not None:
            taken.release(state.cluster.node)

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        for note in self.notes:
            terminalreporter.write_line(note, yellow=True)
