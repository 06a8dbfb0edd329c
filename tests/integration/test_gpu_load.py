"""GPUs under load on the simulated cluster: one GPU's GEMM or HBM 30% below its siblings, or HW
slowdown under the GEMM, fails that node naming the GPU by bus id and sends back only that node.

Three nodes, one run: a healthy one, one whose GPU 3 computes at 0.7 of its siblings and whose
GPU 5 shows HW Slowdown while loaded (on a pre-R535 driver's field names), one whose GPU 6's HBM
copies at 0.7.  The GEMM runs 2 s.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from simcluster import SimCluster
from simcluster.fabric_run import run_with_record
from simcluster.gpu import FakeGpus, install_gpus, uninstall_gpus

from pytest_fabric.report.summary import nodeset

PROFILE = Path(__file__).resolve().parents[1] / "data" / "profiles" / "sim-gpu-load.yaml"


def test_slow_gemm_hbm_and_hw_slowdown_fail_their_node_by_gpu(
    pytester: pytest.Pytester, simcluster: SimCluster, sim_inventory: Path
) -> None:
    healthy, gemm_bad, hbm_bad = (n.name for n in simcluster.nodes[:3])
    faults = {
        healthy: FakeGpus(gemm_report_s=0.5),
        # a driver before R535 (clocks_throttle_reasons.*): the probe falls back to that spelling
        gemm_bad: FakeGpus(gemm_report_s=0.5, gemm_scale={3: 0.7}, throttle_under_load={5: ["hw_slowdown"]},
                           clock_event_prefix="clocks_throttle_reasons"),
        hbm_bad: FakeGpus(gemm_report_s=0.5, hbm_scale={6: 0.7}),
    }
    try:
        for name, gpus in faults.items():
            install_gpus(simcluster, name, gpus)
        result, record = run_with_record(
            pytester, sim_inventory, PROFILE, "-k", f"gpu_load and ({healthy} or {gemm_bad} or {hbm_bad})", timeout=120
        )
    finally:
        uninstall_gpus(simcluster)
    outcomes = {(c["check"], c["subject"]): c for c in record["checks"] if c["layer"] == "intra_node"}
    assert {k: c["outcome"] for k, c in outcomes.items()} == {
        ("gemm_throughput", healthy): "passed",
        ("gemm_throughput", gemm_bad): "failed",
        ("gemm_throughput", hbm_bad): "passed",
        ("clock_throttling", healthy): "passed",
        ("clock_throttling", gemm_bad): "failed",
        ("clock_throttling", hbm_bad): "passed",
        ("memory_bandwidth", healthy): "passed",
        ("memory_bandwidth", gemm_bad): "passed",
        ("memory_bandwidth", hbm_bad): "failed",
    }, result.stdout.str()[-3000:]
    gemm = str(outcomes[("gemm_throughput", gemm_bad)]["message"])
    # GPU 3 at 0.7; GPU 5 held to 1110 of 1755 MHz computes at 0.63 too: both named, no other
    assert "GPU3 (00000000:5D:00.0)" in gemm and "30% below the median" in gemm, gemm
    assert "GPU5 (00000000:AB:00.0)" in gemm and "GPU4 (" not in gemm.split("; all:")[0], gemm
    clocks = str(outcomes[("clock_throttling", gemm_bad)]["message"])
    assert "nvidia-smi clocks_throttle_reasons.* samples" in clocks, clocks
    assert "GPU5 (00000000:AB:00.0): HW Slowdown in" in clocks and "GPU3 (" not in clocks.split("(reported)")[0], clocks
    hbm = str(outcomes[("memory_bandwidth", hbm_bad)]["message"])
    assert "GPU6 (00000000:ba:00)" in hbm and "30% below the median" in hbm, hbm
    assert (record["run"]["verdict"], record["run"]["send_back"]) == ("reject", nodeset([gemm_bad, hbm_bad])), record["run"]
