"""The run's answer, once per mount, to whether it is shared: findmnt on every node, decided by locality.py.

Made before the plan line where a selected storage check loads a mount (report/progress.py), so the
plan prices the mode the run then uses; else on first use by a storage fixture. Both ask through
``state.once``, so it is made once. findmnt runs once per node and mount for it and for the
``mount`` check (:func:`mount_reading`): deciding adds no command to a run that checks its mounts.
"""

from __future__ import annotations

from collections.abc import Iterable

import pytest

from pytest_fabric.parsers.findmnt import FindmntFilesystem
from pytest_fabric.probes.storage import MountState, check_mount
from pytest_fabric.run.cluster import Cluster, NodeHandle
from pytest_fabric.run.fixtures import make_transport_for
from pytest_fabric.run.locality import MountSharing, decide
from pytest_fabric.run.open_cluster import open_cluster
from pytest_fabric.run.state import FabricState, get_state

__all__ = ["decided", "decide_before_plan", "mount_reading", "mount_sharing"]

_DECIDED = "mount sharing"
_READING = "mount reading"


def mount_reading(state: FabricState, node: NodeHandle, path: str) -> MountState:
    """What ``node`` has at ``path`` (findmnt, probes/storage.py check_mount), read once per run."""
    return state.once.get(_READING, (node.name, path), lambda: check_mount(node, state.inventory.mount(path)))


def mount_sharing(state: FabricState, cluster: Cluster, path: str) -> MountSharing:
    """Whether ``path`` is shared, decided once from the inventory and findmnt on every node."""

    def work_out() -> MountSharing:
        def seen_on(node: NodeHandle) -> FindmntFilesystem | None:
            try:
                return mount_reading(state, node, path).mounted
            except Exception:  # noqa: BLE001 - that node's own error, which its checks report; it tells nothing here
                return None

        nodes = cluster.nodes
        seen = state.batches.fan_out(nodes, seen_on)
        return decide(state.inventory.mount(path), {n.name: fs for n, fs in zip(nodes, seen)})

    return state.once.get(_DECIDED, path, work_out)


def decided(state: FabricState, path: str | None) -> MountSharing | None:
    """The decision for ``path`` where the run made it (None: not yet, or the temp dir)."""
    return None if path is None else state.once.peek(_DECIDED, path)


def decide_before_plan(config: pytest.Config, paths: Iterable[str]) -> list[MountSharing]:
    """Each path's decision, opening the cluster's connections first if no test has yet (the plan line
    comes before any test): the ones the ``cluster`` fixture then uses, so nothing is opened twice."""
    state = get_state(config)
    assert state is not None
    wanted = list(dict.fromkeys(paths))
    if not wanted:
        return []
    # As the `cluster` fixture opens it (fixtures.py: connected and locked), which finds it open and keeps it.
    cluster = open_cluster(config, state, make_transport_for(config))
    return [mount_sharing(state, cluster, path) for path in wanted]
