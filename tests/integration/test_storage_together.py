"""sequential_write measured together on the simulated cluster: nodes of unequal speed on one shared mount.

The shared mount is one host directory bound into both nodes (tests/simcluster/mounts.py); each
node's processes are in a block-I/O cgroup of its own with a write limit on the host's disk
(tests/simcluster/throttle.py): node01 writes at up to 40 MB/s, node02 at up to 8 MB/s.

A together figure is a node's share of the mount while every node ran, so every node must run over
the same window. Size-based (the 8 MiB file once) node01 would be done in a fifth of a second and
node02 would write most of its file alone: had the mount a limit of its own, node02's figure would
then count the bandwidth node01 left it. Time-based and started together, both write for the same
3 s, and each figure is that node's bytes over that window (the kernel's count agrees).

This machine's cgroup v1 blkio throttle is not hierarchical, so the simulator cannot also give the
mount a limit both nodes share; the test judges what makes the figures add up under one: the
windows. fio's JSON ends with the wall clock of its end (timestamp_ms), the same clock on every
simulated node, so each run's window is [end - runtime, end].
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from simcluster import SimCluster
from simcluster.fabric_run import fast_and_slow_on_a_shared_mount, run_with_record
from simcluster.mounts import SimMounts

PROFILE = Path(__file__).resolve().parents[1] / "data" / "profiles" / "sim-storage-together.yaml"
FAST, SLOW = 40_000_000, 8_000_000  # bytes/s
RUNTIME_S = 3  # the profile's runtime


def run_fabric(pytester: pytest.Pytester, inventory: Path, *args: str) -> tuple[pytest.RunResult, dict[str, Any]]:
    return run_with_record(pytester, inventory, PROFILE, *args)


def test_nodes_of_unequal_speed_measured_together_write_over_the_same_window(
    pytester: pytest.Pytester, simcluster: SimCluster
) -> None:
    with fast_and_slow_on_a_shared_mount(pytester, simcluster, FAST, SLOW) as pair:
        fast_node, slow_node, fast, slow = pair.fast_node, pair.slow_node, pair.fast, pair.slow
        result, record = run_fabric(pytester, pair.inventory, "-k", "test_sequential_write",
                                    f"--evidence-dir={pytester.path / 'evidence'}")
        written = {fast_node.name: fast.written(), slow_node.name: slow.written()}  # the kernel's counts
    result.assert_outcomes(passed=2)
    windows: dict[str, tuple[float, float]] = {}
    figures: dict[str, float] = {}
    for check in [c for c in record["checks"] if c["check"] == "sequential_write"]:
        (run,) = [e for e in check["evidence"] if e["command"].startswith("fio ")]
        node = run["node"]
        assert {"--time_based", f"--runtime={RUNTIME_S}", f"--size={8 << 20}"} <= set(run["command"].split()), run
        document = json.loads((pytester.path / run["stdout_file"]).read_text())
        (job,) = document["jobs"]
        runtime_s = job["write"]["runtime"] / 1000
        end_s = document["timestamp_ms"] / 1000
        windows[node] = (end_s - runtime_s, end_s)
        figures[node] = job["write"]["io_bytes"] / runtime_s
        assert "started together with 1 other node(s) on the shared mount" in check["message"], check["message"]
        assert "the same window as theirs" in check["message"]
        assert check["extra"]["measured"]["mode"] == "together"
        # What fio says the node wrote is what the kernel saw it write (the throttle counts O_DIRECT writes).
        assert 0.97 * written[node] <= job["write"]["io_bytes"] <= 1.01 * written[node], (node, job["write"], written)

    # The throttles took effect: node02 at its 8 MB/s, node01 several times faster.
    assert 0.7 * SLOW <= figures[slow_node.name] <= 1.1 * SLOW, figures
    assert figures[fast_node.name] > 3 * figures[slow_node.name], figures
    # The same window: each ran the runtime, and the two overlap for nearly all of it (the launches'
    # spread is a round trip). Size-based, node01's run would be over before a tenth of node02's.
    for start, end in windows.values():
        assert end - start >= 0.95 * RUNTIME_S, windows
    overlap = min(end for _, end in windows.values()) - max(start for start, _ in windows.values())
    assert overlap >= 0.8 * RUNTIME_S, windows


def test_reads_iops_and_checkpoints_measured_together_start_together_time_based(
    pytester: pytest.Pytester, simcluster: SimCluster
) -> None:
    nodes = simcluster.nodes[:3]
    with SimMounts(simcluster) as mounts:
        path = mounts.shared(nodes)
        inventory = simcluster.write_inventory(
            pytester.path / "inventory.yaml", nodes=[n.name for n in nodes],
            extra={"storage": {"mounts": [{"path": path, "fstype": "ext4", "shared": True}]}},
        )
        result, record = run_fabric(pytester, inventory, "-k", "sequential_read or random_read or checkpoint",
                                    f"--evidence-dir={pytester.path / 'evidence'}")
    result.assert_outcomes(passed=3 * 3)
    for check in [c for c in record["checks"] if c["check"] in ("sequential_read", "random_read_iops", "checkpoint_write")]:
        runs = [e for e in check["evidence"] if e["command"].startswith("fio ") and "--create_only=1" not in e["command"]]
        (run,) = runs
        assert "--time_based" in run["command"].split() and "--runtime=2" in run["command"].split(), run["command"]
        assert "started together with 2 other node(s) on the shared mount" in check["message"], check["message"]
        assert check["extra"]["together"]["nodes"] == 3
        if check["check"] == "sequential_read":
            # Another node laid out the files, before any node's read began.
            assert check["extra"]["read_from"]["cache"] == "other node" and run["node"] != check["extra"]["read_from"]["laid_out_by"]
        if check["check"] == "checkpoint_write":
            assert "--end_fsync=1" in run["command"].split() and "--direct=0" in run["command"].split()
            assert "ended by fsync" in check["message"]
