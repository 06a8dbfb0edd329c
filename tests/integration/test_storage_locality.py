"""A node-local disk is measured on every node at once, a shared mount in turns: decided from findmnt.

Each node gets its own ext4 on its own loop device at one path (tests/simcluster/mounts.py
``loop_disks``): findmnt shows /dev/loopN, a different source on each node, as node-local NVMe
does. Without ``shared:`` in the inventory those nodes measure together; with ``shared: true``
the inventory wins, and the header says once that findmnt shows otherwise. A host directory bound
on every node (one source everywhere, no type stated) is still measured one node at a time. The
plan, stated before anything is measured, prices the mode the run then uses.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from simcluster import SimCluster
from simcluster.fabric_run import run_with_record
from simcluster.mounts import SimMounts

PROFILE = Path(__file__).resolve().parents[1] / "data" / "profiles" / "sim-storage-mounts.yaml"


@pytest.fixture
def mounts(simcluster: SimCluster) -> Iterator[SimMounts]:
    with SimMounts(simcluster) as made:
        yield made


def _run(pytester: pytest.Pytester, simcluster: SimCluster, nodes: list[str], mount: Any,
         *args: str) -> tuple[pytest.RunResult, dict[str, Any]]:
    inventory = simcluster.write_inventory(pytester.path / "inventory.yaml", nodes=nodes,
                                           extra={"storage": {"mounts": [mount]}})
    return run_with_record(pytester, inventory, PROFILE, *args)


def _checks(record: dict[str, Any], check: str) -> list[dict[str, Any]]:
    return [c for c in record["checks"] if c["check"] == check]


def _storage_plan_s(record: dict[str, Any]) -> float:
    (phase,) = [p for p in record["run"]["plan"]["phases"] if p["phase"] == "storage"]
    return float(phase["planned_s"])


def test_per_node_disks_are_measured_together_and_shared_true_takes_turns_saying_so_once(
    pytester: pytest.Pytester, simcluster: SimCluster, mounts: SimMounts
) -> None:
    nodes = [n.name for n in simcluster.nodes[:3]]
    path = mounts.loop_disks(nodes)
    selected = ("-k", "sequential_write or random_read_iops")

    result, record = _run(pytester, simcluster, nodes, path, *selected)
    result.assert_outcomes(passed=6)
    assert "the inventory says shared" not in result.stdout.str()
    for check in _checks(record, "sequential_write") + _checks(record, "random_read_iops"):
        assert check["extra"]["measured_as"] == "all 3 at once", check
        measured = check["extra"]["measured"]
        assert measured["mode"] == "node-local"
        assert measured["sharing"]["shared"] is False and "different source on each node" in measured["sharing"]["why"]
        assert "/dev/loop" in check["extra"]["filesystem"]["source"]
    local_plan = _storage_plan_s(record)

    result, record = _run(pytester, simcluster, nodes, {"path": path, "shared": True}, *selected)
    said = [line for line in result.stdout.lines if "the inventory says shared: true" in line]
    assert len(said) == 1, result.stdout.str()
    assert path in said[0] and "different source on each node" in said[0] and "/dev/loop" in said[0]
    writes = _checks(record, "sequential_write")
    assert {c["outcome"] for c in writes} == {"passed"}
    for check in writes:
        assert check["extra"]["measured_as"] == f"one at a time of 3 (shared mount {path} is shared)"
        assert check["extra"]["measured"]["sharing"]["contradiction"] == said[0].removeprefix("fabric: ")
    # Read as shared, another node lays the files out: on a disk of each node's own the reader cannot see them.
    reads = _checks(record, "random_read_iops")
    assert all(c["outcome"] == "error" and "the mount is not shared between them" in c["message"] for c in reads)
    # The plan prices what the run does: three turns of each check against one wave of all three.
    shared_plan = _storage_plan_s(record)
    batches = 2 * 0.1  # plan.BATCH_S per check
    assert shared_plan - batches == pytest.approx(3 * (local_plan - batches), abs=0.3), (local_plan, shared_plan)


def test_a_mount_bound_from_one_source_on_every_node_is_still_shared(
    pytester: pytest.Pytester, simcluster: SimCluster, mounts: SimMounts
) -> None:
    nodes = [n.name for n in simcluster.nodes[:3]]
    path = mounts.shared(nodes)  # one host directory: the same source on every node, no type stated
    result, record = _run(pytester, simcluster, nodes, path, "-k", "sequential_write")
    result.assert_outcomes(passed=3)
    assert "the inventory says shared" not in result.stdout.str()
    for check in _checks(record, "sequential_write"):
        assert check["extra"]["measured_as"] == f"one at a time of 3 (shared mount {path} is shared)"
        sharing = check["extra"]["measured"]["sharing"]
        assert sharing["shared"] is True and "same source" in sharing["why"]
