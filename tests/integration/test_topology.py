"""GPU-NIC affinity, GPU health and switch links on the simulated cluster: each fault fails its own check.

One run, one fault per node: a GPU that reaches every NIC only over SYS, two GPUs with swapped
rails, a DCGM PCIe failure on one GPU, a node without DCGM; and a fabric with a downgraded
spine link and a host link trained at 2X.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from simcluster import SimCluster
from simcluster.gpu import FakeGpus, install_gpus, uninstall_gpus
from simcluster.hardware import install_hardware, uninstall_hardware
from simcluster.stack import FakeStack, install_stack, uninstall_stack
from simcluster.switches import fabric_scan, install_fabric_scan, uninstall_fabric_scan

PROFILE = Path(__file__).resolve().parents[1] / "data" / "profiles" / "sim-topology.yaml"
NODES = [f"node{i:02d}" for i in range(1, 9)]
GPUS = {"node02": FakeGpus(nic_path={3: "SYS"}), "node03": FakeGpus(nic_of={2: 3, 3: 2})}
STACKS = {"node04": FakeStack(dcgm_failures={5: "PCIe"}), "node05": FakeStack(dcgm=False)}


@pytest.fixture
def faulty(simcluster: SimCluster) -> Iterator[SimCluster]:
    try:
        install_hardware(simcluster, {})
        for name in NODES:
            install_gpus(simcluster, name, GPUS.get(name, FakeGpus()))
            install_stack(simcluster, name, STACKS.get(name, FakeStack()))
        install_fabric_scan(simcluster, fabric_scan(NODES, {("leaf2", 41): ("4X", "25.78125"),
                                                            ("leaf1", 3): ("2X", "53.125")}))
        yield simcluster
    finally:
        uninstall_fabric_scan(simcluster)
        uninstall_stack(simcluster)
        uninstall_gpus(simcluster)
        uninstall_hardware(simcluster)


def test_affinity_rails_health_and_switch_links(pytester: pytest.Pytester, faulty: SimCluster, sim_inventory: Path) -> None:
    record = pytester.path / "record.json"
    result = pytester.runpytest_subprocess(
        "--cluster", str(sim_inventory), "--profile", str(PROFILE), "-p", "no:cacheprovider", "-rA",
        "-k", "affinity or rails or health or switch_links", f"--conformance-json={record}", timeout=240,
    )
    checks = {(c["check"], c["subject"]): c for c in json.loads(record.read_text())["checks"]}
    expected = {(check, node): "passed" for node in NODES for check in ("gpu_nic_affinity", "gpu_health")}
    expected.update({("gpu_rails", "cluster"): "failed", ("switch_links", "cluster"): "failed",
                     ("gpu_nic_affinity", "node02"): "failed", ("gpu_health", "node04"): "failed",
                     # a missing tool is an error of its node, never a skip that leaves a set check unmeasured
                     ("gpu_health", "node05"): "error"})
    assert set(checks) == set(expected), sorted(set(checks) ^ set(expected))
    wrong = {k: (checks[k]["outcome"], want) for k, want in expected.items() if checks[k]["outcome"] != want}
    assert not wrong, f"{wrong}\n{result.stdout.str()[-5000:]}"

    def message(check: str, subject: str) -> str:
        return str(checks[(check, subject)]["message"])

    far = message("gpu_nic_affinity", "node02")
    assert "GPU3 reaches its nearest NIC (mlx5_0 or mlx5_1" in far and "only over SYS" in far, far
    rails = message("gpu_rails", "cluster")
    assert "node03: GPU2 -> mlx5_3; 7 others mlx5_2" in rails and "node03: GPU3 -> mlx5_2; 6 others mlx5_3" in rails
    assert "node02: GPU3 -> mlx5_0 or mlx5_1" in rails, rails
    health = message("gpu_health", "node04")
    assert "GPU5: PCIe (Warning: GPU 5 PCIe test failed" in health, health
    missing = message("gpu_health", "node05")
    assert "dcgmi: command not found" in missing and "datacenter-gpu-manager" in missing, missing
    links = message("switch_links", "cluster")
    assert "2 of 12 switch links bad" in links, links
    assert "leaf2 (0x08c0eb0300a0b102) port 41 <-> spine1 (LID 103) port 3: 4X 100 Gb/s" in links, links
    assert "leaf1 (0x08c0eb0300a0b101) port 3 <-> node03 mlx5_0 (LID 13) port 1: 2X 100 Gb/s; 2X wide, expected 4X" in links
    assert "Could be 4X 53.125 Gbps" in links
