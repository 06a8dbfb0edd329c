"""Run pytest-fabric's command line against a simulated cluster from a pytester test, and read its record."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from simcluster.cluster import SimCluster, SimNode
from simcluster.mounts import ROOT, SimMounts
from simcluster.throttle import NodeThrottle, WriteThrottle, missing_throttle


def run_with_record(
    pytester: pytest.Pytester, inventory: Path, profile: Path, *args: str, timeout: float = 240
) -> tuple[pytest.RunResult, dict[str, Any]]:
    """``pytest --cluster INVENTORY --profile PROFILE ARGS`` in a subprocess, and its JSON record."""
    record = pytester.path / "record.json"
    result = pytester.runpytest_subprocess(
        "--cluster", str(inventory), "--profile", str(profile), "-p", "no:cacheprovider", "-rA",
        f"--conformance-json={record}", *args, timeout=timeout,
    )
    return result, json.loads(record.read_text())


@dataclass(frozen=True)
class FastAndSlow:
    """Two nodes on one shared ext4 mount, each node's writes to it throttled (the kernel counts them)."""

    fast_node: SimNode
    slow_node: SimNode
    path: str
    inventory: Path
    fast: NodeThrottle
    slow: NodeThrottle


@contextlib.contextmanager
def fast_and_slow_on_a_shared_mount(
    pytester: pytest.Pytester, cluster: SimCluster, fast_bps: int, slow_bps: int
) -> Iterator[FastAndSlow]:
    """The cluster's first two nodes writing to a shared mount at ``fast_bps`` and ``slow_bps``, and an
    inventory of just them naming the mount; skips where node writes cannot be throttled."""
    missing = missing_throttle(ROOT)
    if missing:
        pytest.skip("node writes cannot be throttled here: " + "; ".join(missing))
    fast_node, slow_node = cluster.nodes[:2]
    with SimMounts(cluster) as mounts, WriteThrottle(cluster) as throttle:
        path = mounts.shared([fast_node, slow_node])
        fast = throttle.limit(fast_node, fast_bps, path)
        slow = throttle.limit(slow_node, slow_bps, path)
        inventory = cluster.write_inventory(
            pytester.path / "inventory.yaml", nodes=[fast_node.name, slow_node.name],
            extra={"storage": {"mounts": [{"path": path, "fstype": "ext4", "shared": True}]}},
        )
        yield FastAndSlow(fast_node, slow_node, path, inventory, fast, slow)
