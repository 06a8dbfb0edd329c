"""gpu_interconnect on the simulated cluster: a GPU the NVSwitch fabric manager has not registered.

topo -m shows its NV18 links either way; only nvidia-smi's fabric state (``In Progress``
until the fabric manager registers the GPU) tells that CUDA cannot use them yet.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from simcluster import SimCluster
from simcluster.fabric_run import run_with_record
from simcluster.gpu import FakeGpus, install_gpus, uninstall_gpus

PROFILE = Path(__file__).resolve().parents[1] / "data" / "profiles" / "sim-gpu.yaml"


def test_a_gpu_not_registered_with_the_nvlink_fabric_fails_its_node_by_name(
    pytester: pytest.Pytester, simcluster: SimCluster, sim_inventory: Path
) -> None:
    healthy, stuck = (n.name for n in simcluster.nodes[:2])
    try:
        install_gpus(simcluster, healthy, FakeGpus())
        install_gpus(simcluster, stuck, FakeGpus(fabric={3: ("In Progress", "N/A")}))
        _, record = run_with_record(
            pytester, sim_inventory, PROFILE, "-k", f"gpu_interconnect and ({healthy} or {stuck})", timeout=120
        )
    finally:
        uninstall_gpus(simcluster)
    checks = {
        c["subject"]: c
        for c in record["checks"]
        if c["check"] == "gpu_interconnect"
    }
    assert {subject: c["outcome"] for subject, c in checks.items()} == {
        healthy: "passed",
        stuck: "failed",
    }
    failed = str(checks[stuck]["message"])
    assert (
        "GPU3 (00000000:" in failed and "NVLink fabric state In Progress, status N/A" in failed
    ), failed
    assert "1 of 8 GPU(s) not registered" in failed and "nvidia-fabricmanager" in failed, failed
    assert "GPU2 (" not in failed
