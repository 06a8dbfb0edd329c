"""The intra-node layer on the simulated cluster: each GPU fault fails exactly its check and subject.

One run measures all 8 nodes at once, each node carrying at most one fault, so
the whole layer is proven in a single ``pytest --cluster`` run (seconds, not
minutes).  The GPU stand-ins (tests/simcluster/gpu.py) are installed for the
test and removed afterwards: the simulated cluster is shared by the session.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from simcluster import SimCluster
from simcluster.gpu import FakeGpus, install_gpus, installed_gpu_nodes, uninstall_gpus

PROFILE = Path(__file__).resolve().parents[1] / "data" / "profiles" / "sim-gpu.yaml"
NODE_CHECKS = (
    "gpu_count", "gpu_interconnect", "nic_pcie", "nvlink_bandwidth",
    "host_to_device_bandwidth", "device_to_host_bandwidth", "node_nccl_allreduce",
)
GPU_CHECKS = ("gpu_model", "gpu_pcie")
# Checks that need nvidia-smi itself (nvlink_bandwidth reads `nvidia-smi nvlink --status` first).
NEEDS_NVIDIA_SMI = ("gpu_count", "gpu_interconnect", "nvlink_bandwidth", "node_nccl_allreduce", *GPU_CHECKS)

# One fault per node; node01 and node08 are healthy (node08's GPU 1 idles at Gen1, which is power saving:
# under load it wakes to Gen5).
FAULTS = {
    "node01": FakeGpus(),
    "node02": FakeGpus(inactive=[6]),
    "node03": FakeGpus(pcie_only_pairs=[(2, 5)]),
    "node04": FakeGpus(pcie={3: (4, 8)}),
    "node05": FakeGpus(count=7),
    "node06": FakeGpus(slow_pairs={(1, 4): 150.0}),
    "node07": FakeGpus(),  # nvidia-smi removed below
    "node08": FakeGpus(idle=[1]),
}


@pytest.fixture
def gpus(simcluster: SimCluster) -> Iterator[SimCluster]:
    """The FAULTS stand-ins on every node, removed however the test ends."""
    try:
        for name, model in FAULTS.items():
            install_gpus(simcluster, name, model)
        simcluster.remove_tool("node07", "nvidia-smi")
        yield simcluster
    finally:
        uninstall_gpus(simcluster)
    assert installed_gpu_nodes(simcluster) == []


def outcomes(record: Path) -> dict[tuple[str, str], dict]:
    """(check, subject) -> the JSON record's entry."""
    doc = json.loads(record.read_text())
    return {(c["check"], c["subject"]): c for c in doc["checks"]}


def test_each_gpu_fault_fails_its_own_check_and_subject(
    pytester: pytest.Pytester, gpus: SimCluster, sim_inventory: Path
) -> None:
    record = pytester.path / "record.json"
    result = pytester.runpytest_subprocess(
        "--cluster", str(sim_inventory), "--profile", str(PROFILE), "-p", "no:cacheprovider", "-rA",
        "-m", "intra_node", f"--conformance-json={record}", timeout=240,
    )
    # The checks sim-gpu sets; the layer's others (gpu_nic_affinity, gpu_health ...) skip and have tests of their own.
    checks = {key: c for key, c in outcomes(record).items() if key[0] in NODE_CHECKS + GPU_CHECKS}
    nodes = [f"node{i:02d}" for i in range(1, 9)]
    expected: dict[tuple[str, str], str] = {}
    for node in nodes:
        for check in NODE_CHECKS:
            expected[(check, node)] = "passed"
        for check in GPU_CHECKS:
            for index in range(8):
                expected[(check, f"{node}:gpu{index}")] = "passed"
    expected[("nvlink_bandwidth", "node02")] = "failed"
    expected[("gpu_interconnect", "node03")] = "failed"
    expected[("nvlink_bandwidth", "node03")] = "failed"  # the PCIe-only pair copies at PCIe speed
    expected[("gpu_pcie", "node04:gpu3")] = "failed"
    expected[("host_to_device_bandwidth", "node04")] = "failed"  # Gen4 x8 moves a quarter of Gen5 x16
    expected[("device_to_host_bandwidth", "node04")] = "failed"
    for check in ("gpu_count", "node_nccl_allreduce", "gpu_model:7", "gpu_pcie:7"):
        name, _, index = check.partition(":")
        expected[(name, f"node05:gpu{index}" if index else "node05")] = "failed"
    expected[("nvlink_bandwidth", "node06")] = "failed"
    for check in NEEDS_NVIDIA_SMI:
        for subject in ([f"node07:gpu{i}" for i in range(8)] if check in GPU_CHECKS else ["node07"]):
            expected[(check, subject)] = "error"

    got = {key: checks[key]["outcome"] for key in expected if key in checks}
    assert set(checks) == set(expected), sorted(set(checks) ^ set(expected))
    wrong = {key: (got[key], want) for key, want in expected.items() if got[key] != want}
    assert not wrong, f"{wrong}\n{result.stdout.str()[-4000:]}"

    def message(check: str, subject: str) -> str:
        return str(checks[(check, subject)]["message"])

    # Every failure says what to fix, naming the pair, the link or the missing GPU.
    assert "GPU2<->GPU5 is SYS" in message("gpu_interconnect", "node03")
    assert "measured mixed" in message("gpu_interconnect", "node03")
    pcie = message("gpu_pcie", "node04:gpu3")
    assert "Gen4 x8 under load" in pcie and "trained below its max" in pcie, pcie
    assert "gpu7 is missing" in message("gpu_model", "node05:gpu7")
    assert re.search(r"measured 7\b.*== 8", message("gpu_count", "node05")), message("gpu_count", "node05")
    slow = message("nvlink_bandwidth", "node06")
    assert "GPU1->GPU4 150.00 GB/s" in slow and ">= 335 GB/s" in slow, slow
    assert "all NVLinks inactive on GPU6" in message("nvlink_bandwidth", "node02")
    assert "nvidia-smi: command not found" in message("gpu_count", "node07")
    # An idle GPU at Gen1 is power saving, not a fault: under load it reads its trained Gen5.
    idle = message("gpu_pcie", "node08:gpu1")
    assert "Gen5 x16 under load" in idle and "before the copy it read Gen1" in idle, idle
    # The report gets the per-node NVLink matrix and the tool versions.
    matrix = checks[("nvlink_bandwidth", "node01")]["extra"]["matrix"]
    assert matrix["gpus"] == [f"GPU{i}" for i in range(8)] and len(matrix["values"]) == 8
    assert matrix["values"][0][0] is None and matrix["values"][0][1] > 335
    versions = checks[("nvlink_bandwidth", "node01")]["extra"]["tool_versions"]
    assert versions["nvbandwidth"] == "0.7" and versions["nvidia-driver"] == "550.90.07"
    assert checks[("gpu_count", "node01")]["extra"]["tool_versions"]["cuda"] == "12.4"
    assert checks[("node_nccl_allreduce", "node01")]["extra"]["tool_versions"]["nccl"].startswith("2.21.5")


def test_nvidia_smi_text_log_is_read_when_the_xml_is_broken(
    pytester: pytest.Pytester, simcluster: SimCluster, sim_inventory: Path
) -> None:
    """Some drivers print unusable XML; the plain ``nvidia-smi -q`` log carries the same facts."""
    node = simcluster.nodes[0].name
    try:
        install_gpus(simcluster, node, FakeGpus(pcie={5: (4, 16)}))
        # Wrap the stand-in: `-q -x` prints a truncated document, everything else passes through.
        target = simcluster.nodes[0].bindir / "nvidia-smi"
        target.rename(target.with_name("nvidia-smi-real"))
        simcluster.install_tool(
            node, "nvidia-smi",
            '# GPU stand-in wrapper\ncase "$*" in "-q -x") echo "<?xml version=\\"1.0\\" ?><nvidia_smi_log><gpu";;\n'
            '*) exec "$(dirname "$0")/nvidia-smi-real" "$@";; esac\n',
        )
        result = pytester.runpytest_subprocess(
            "--cluster", str(sim_inventory), "--profile", str(PROFILE), "-p", "no:cacheprovider", "-rA",
            "-m", "intra_node", "-k", f"{node} and (gpu_pcie or gpu_count)", timeout=120,
        )
    finally:
        simcluster.remove_tool(node, "nvidia-smi-real")
        uninstall_gpus(simcluster, node)
    result.assert_outcomes(passed=8, failed=1)
    result.stdout.fnmatch_lines([f"*{node}:gpu5: generation measured 4 *Gen4 x16 under load*"])


def test_gpu_pcie_is_judged_on_the_link_under_load(
    pytester: pytest.Pytester, simcluster: SimCluster, sim_inventory: Path
) -> None:
    """A Gen4 GPU whose link trained down to Gen3 fails: idle it reads Gen1 with Max Gen4, so only a
    reading taken while a host copy keeps it busy shows the fault.  Without nvbandwidth to make the
    load, gpu_pcie errors and says so (never a quiet pass on Max)."""
    healthy, degraded, no_load_tool = (n.name for n in simcluster.nodes[:3])
    a100 = {"max_generation": 4, "idle": list(range(8))}  # every GPU idle (P8, Gen1) until a copy runs
    record = pytester.path / "record.json"
    try:
        install_gpus(simcluster, healthy, FakeGpus(**a100))  # type: ignore[arg-type]
        install_gpus(simcluster, degraded, FakeGpus(pcie={2: (3, 16)}, **a100))  # type: ignore[arg-type]
        install_gpus(simcluster, no_load_tool, FakeGpus(**a100))  # type: ignore[arg-type]
        simcluster.remove_tool(no_load_tool, "nvbandwidth")
        pytester.runpytest_subprocess(
            "--cluster", str(sim_inventory), "--profile", str(PROFILE), "-p", "no:cacheprovider", "-rA",
            # Gen4 nodes: the Gen5 copy floors would be above a Gen4 x16 line (refused at load), so Gen4's
            "--expect", "intra_node.gpu_pcie.generation=4", "--expect", "intra_node.host_to_device_bandwidth=24 GB/s",
            "--expect", "intra_node.device_to_host_bandwidth=24 GB/s", f"--conformance-json={record}",
            "-k", f"gpu_pcie and ({healthy} or {degraded} or {no_load_tool})", timeout=180,
        )
    finally:
        uninstall_gpus(simcluster)
    checks = outcomes(record)
    got = {subject: c["outcome"] for (check, subject), c in checks.items() if check == "gpu_pcie"}
    want = {f"{node}:gpu{i}": "passed" for node in (healthy, degraded) for i in range(8)}
    want[f"{degraded}:gpu2"] = "failed"
    want.update({f"{no_load_tool}:gpu{i}": "error" for i in range(8)})
    assert got == want
    failed = str(checks[("gpu_pcie", f"{degraded}:gpu2")]["message"])
    assert "generation measured 3" in failed and "under load" in failed, failed
    assert "nvbandwidth -t host_to_all_memcpy_ce" in failed and "max Gen4" in failed, failed
    passed = str(checks[("gpu_pcie", f"{healthy}:gpu2")]["message"])
    assert "Gen4 x16 under load" in passed, passed
    error = str(checks[("gpu_pcie", f"{no_load_tool}:gpu0")]["message"])
    assert "nvbandwidth" in error and "not on PATH" in error and "github.com/NVIDIA/nvbandwidth" in error, error


def test_above_the_device_test_limit_one_test_per_node_judges_each_gpu(
    pytester: pytest.Pytester, gpus: SimCluster, sim_inventory: Path
) -> None:
    """Fails before --fabric-device-tests-up-to: 4,096 nodes of 8 GPUs were 65,536 tests of two checks."""
    record = pytester.path / "record.json"
    result = pytester.runpytest_subprocess(
        "--cluster", str(sim_inventory), "--profile", str(PROFILE), "-p", "no:cacheprovider",
        "-k", "gpu_model or gpu_pcie", "--fabric-device-tests-up-to", "4", f"--conformance-json={record}", timeout=240,
    )
    result.stdout.fnmatch_lines(["fabric: GPUs and RDMA ports: one test per node and check above 4 nodes*"])
    checks = {key: c for key, c in outcomes(record).items() if key[0] in GPU_CHECKS}
    assert set(checks) == {(check, f"node{i:02d}:gpus") for check in GPU_CHECKS for i in range(1, 9)}
    got = {key: c["outcome"] for key, c in checks.items()}
    bad = {key: outcome for key, outcome in got.items() if outcome != "passed"}
    assert bad == {("gpu_pcie", "node04:gpus"): "failed", ("gpu_model", "node05:gpus"): "failed",
                   ("gpu_pcie", "node05:gpus"): "failed", ("gpu_model", "node07:gpus"): "error",
                   ("gpu_pcie", "node07:gpus"): "error"}, got
    # each failing GPU under its own name, the healthy ones of the same node not among the failures
    pcie = checks[("gpu_pcie", "node04:gpus")]["message"]
    assert "node04:gpu3:" in pcie and "Gen4 x8 under load" in pcie and "node04:gpu2" not in pcie, pcie
    assert "gpu7 is missing" in checks[("gpu_model", "node05:gpus")]["message"]
    assert "nvidia-smi: command not found" in checks[("gpu_model", "node07:gpus")]["message"]
    # a passing node's record names all eight GPUs it judged
    assert all(f"node01:gpu{i}: measured" in checks[("gpu_model", "node01:gpus")]["message"] for i in range(8))
