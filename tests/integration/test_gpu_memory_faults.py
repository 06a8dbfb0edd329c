"""gpu_health on the simulated cluster: a GPU memory fault nvidia-smi shows fails a node DCGM passed.

DCGM's level-1 diagnostic passes (the stand-in's dcgmi finds nothing); nvidia-smi on one node shows
a GPU with uncorrectable volatile ECC errors and a row remap waiting for a reset.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from simcluster import SimCluster
from simcluster.fabric_run import run_with_record
from simcluster.gpu import FakeGpus, install_gpus, uninstall_gpus
from simcluster.stack import FakeStack, install_stack, uninstall_stack

PROFILE = Path(__file__).resolve().parents[1] / "data" / "profiles" / "sim-topology.yaml"


def test_uncorrectable_ecc_and_a_pending_remap_fail_the_node_by_gpu(
    pytester: pytest.Pytester, simcluster: SimCluster, sim_inventory: Path
) -> None:
    healthy, faulty = (n.name for n in simcluster.nodes[:2])
    try:
        for name, gpus in ((healthy, FakeGpus()), (faulty, FakeGpus(memory={6: (2, True)}))):
            install_gpus(simcluster, name, gpus)
            install_stack(simcluster, name, FakeStack())
        _, record = run_with_record(
            pytester, sim_inventory, PROFILE, "-k", f"gpu_health and ({healthy} or {faulty})", timeout=120
        )
    finally:
        uninstall_stack(simcluster)
        uninstall_gpus(simcluster)
    checks = {
        c["subject"]: c
        for c in record["checks"]
        if c["check"] == "gpu_health"
    }
    assert {subject: c["outcome"] for subject, c in checks.items()} == {
        healthy: "passed",
        faulty: "failed",
    }
    failed = str(checks[faulty]["message"])
    assert "GPU6 (00000000:" in failed, failed
    assert (
        "2 uncorrectable volatile ECC error(s) (DRAM 2); row remapping pending (reset the GPU)"
        in failed
    ), failed
    assert "dcgmi diag -r 1" in failed and "GPU5 (" not in failed, failed
