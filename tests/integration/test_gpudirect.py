"""GPUDirect RDMA bandwidth on the simulated cluster, every GPU of a pair at once: a slow rail fails its GPU by
name, no peermem errors."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from simcluster import SimCluster
from simcluster.gpu import FakeGpus, install_gpus, uninstall_gpus
from simcluster.hardware import (
    FakeHardware,
    FakePort,
    default_ports,
    install_hardware,
    uninstall_hardware,
)

PROFILE = Path(__file__).resolve().parents[1] / "data" / "profiles" / "sim-gpudirect.yaml"


@pytest.fixture
def faulty(simcluster: SimCluster) -> Iterator[SimCluster]:
    slow = default_ports()
    slow[2] = FakePort(device="mlx5_2", netdev="ib2", rdma_bw_gbps=90.0)
    try:
        install_hardware(simcluster, {"node03": FakeHardware(gpudirect=False), "node05": FakeHardware(ports=slow),
                                      "node07": FakeHardware(perftest_cuda=False)})
        for node in simcluster.nodes:
            install_gpus(simcluster, node.name, FakeGpus(count=4, nics=4))
        yield simcluster
    finally:
        uninstall_gpus(simcluster)
        uninstall_hardware(simcluster)


def test_gpudirect_bandwidth_per_gpu(pytester: pytest.Pytester, faulty: SimCluster, sim_inventory: Path) -> None:
    record = pytester.path / "record.json"
    result = pytester.runpytest_subprocess(
        "--cluster", str(sim_inventory), "--profile", str(PROFILE), "-p", "no:cacheprovider", "-rA",
        "-k", "test_gpudirect_bandwidth or test_rdma_bandwidth", f"--conformance-json={record}", timeout=240,
    )
    checks = {c["subject"]: c for c in json.loads(record.read_text())["checks"] if c["check"] == "gpudirect_bandwidth"}
    outcomes = {subject: c["outcome"] for subject, c in checks.items()}
    for subject, outcome in outcomes.items():
        want = "error" if "node03" in subject or "node07" in subject else "failed" if "node05" in subject else "passed"
        assert outcome == want, f"{subject}: {outcome}, want {want}\n{result.stdout.str()[-4000:]}"
    assert any("node05" in s for s in outcomes) and any("node03" in s for s in outcomes), outcomes
    slow = next(c["message"] for s, c in checks.items() if "node05" in s)
    assert "worst GPU2 via mlx5_2 -> mlx5_2" in slow and "GPU0 mlx5_0->mlx5_0" in slow, slow
    # every GPU at once (each has a NIC of its own), each judged on its own figure: the slow rail
    # fails its GPU, the three others keep theirs
    assert "4 GPUs at once" in slow, slow
    assert "GPUs by PCI bus id" in slow, slow  # as nvidia-smi read them: CUDA's own order may differ
    figures = dict(re.findall(r"(GPU\d) mlx5_\d->mlx5_\d ([\d.]+) Gb/s", slow))
    assert float(figures["GPU2"]) < 100 < min(float(v) for g, v in figures.items() if g != "GPU2"), figures
    broken = next(c["message"] for s, c in checks.items() if "node03" in s)
    assert "GPU0 via mlx5_0 -> mlx5_0" in broken and "Couldn't allocate MR" in broken, broken
    assert "modprobe nvidia_peermem" in broken
    # A perftest built without CUDA (most MLNX_OFED builds) is said as that, not as a missing peermem.
    no_cuda = next(c["message"] for s, c in checks.items() if "node07" in s and "node03" not in s)
    assert "perftest built without CUDA" in no_cuda and "nvidia_peermem is not the cause" in no_cuda, no_cuda
    # Each GPU measured is held to host-memory RDMA between the same two ports (rdma_bandwidth of the
    # same pair, measured first for it): node05's slow rail is slow both ways, so consistent.
    for subject, check in checks.items():
        if check["outcome"] == "error":
            continue
        found = check["extra"]["cross_checks"]
        assert len(found) == 4 and {c["status"] for c in found} == {"consistent"}, found
        assert {c["name"] for c in found} == {"gpudirect vs host rdma"} and all(c["bound"] for c in found)
        if "node05" in subject:
            slow_rail = next(c for c in found if "GPU2 via mlx5_2->mlx5_2" in c["detail"])
            assert slow_rail["bound"] < 100 and slow_rail["figure"] < 100, slow_rail
