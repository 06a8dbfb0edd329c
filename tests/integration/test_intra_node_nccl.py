"""Single-node NCCL on the simulated cluster: a node whose all_reduce returns wrong results fails, and is sent back.

nccl-tests exits 1 when its check finds wrong elements; that run is a measured
fault of the node (a failed ``node_nccl_allreduce``, the run REJECTed with the
node to send back), not an error that leaves the run INCOMPLETE with nothing
drained.  Only the check under test runs, on two nodes: one healthy, one whose
GPU stand-in returns 1043 wrong elements at full bandwidth.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from simcluster import SimCluster
from simcluster.gpu import FakeGpus, install_gpus, installed_gpu_nodes, uninstall_gpus

PROFILE = Path(__file__).resolve().parents[1] / "data" / "profiles" / "sim-gpu.yaml"


def test_wrong_results_fail_the_node_and_reject_the_run(
    pytester: pytest.Pytester, simcluster: SimCluster, tmp_path: Path
) -> None:
    healthy, corrupting = (n.name for n in simcluster.nodes[:2])
    inventory = simcluster.write_inventory(tmp_path / "inventory.yaml", nodes=[healthy, corrupting])
    record = pytester.path / "record.json"
    try:
        install_gpus(simcluster, healthy, FakeGpus())
        install_gpus(simcluster, corrupting, FakeGpus(nccl_wrong_elements=1043))
        result = pytester.runpytest_subprocess(
            "--cluster", str(inventory), "--profile", str(PROFILE), "-p", "no:cacheprovider", "-rA",
            "-m", "intra_node", "-k", "node_nccl_allreduce", f"--conformance-json={record}", timeout=180,
        )
    finally:
        uninstall_gpus(simcluster)
    assert installed_gpu_nodes(simcluster) == []
    doc = json.loads(record.read_text())
    checks = {c["subject"]: c for c in doc["checks"] if c["check"] == "node_nccl_allreduce"}
    stdout = result.stdout.str()[-4000:]
    assert {s: c["outcome"] for s, c in checks.items()} == {healthy: "passed", corrupting: "failed"}, stdout
    message = str(checks[corrupting]["message"])
    assert f"all_reduce over 8 GPUs of {corrupting} returned wrong results" in message, message
    # the count and the size row, at the bandwidth 8 H100s' NVLink carries (NVLS: 450 GB/s one way x 2(n-1)/n
    # x 0.61, 480.4 GB/s), which clears the 460 GB/s floor
    assert "2086 wrong elements (1043 at 17179869184 B out-of-place, 1043 at 17179869184 B in-place)" in message, message
    assert "'Out of bounds values : 2 FAILED'" in message and "exit code 1" in message, message
    assert f"Measured {FakeGpus().nccl_busbw():.1f} GB/s" in message, message
    assert (doc["run"]["verdict"], doc["run"]["send_back"]) == ("reject", corrupting), doc["run"]
    result.stdout.fnmatch_lines(["REJECT: 1 failed, 0 errored*", f"nodes to send back: {corrupting}"])
