"""The software layer on the simulated cluster: each stack or setup fault fails its own check and node.

One run of ``-m "software or inter_node"`` with one fault per node: other HCA firmware, an older
NCCL, no nvidia_peermem, a 64 KiB memlock, ACS on, a missing ibstat. The stand-ins come from
tests/simcluster (stack.py, gpu.py, hardware.py) and are removed however the test ends.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from simcluster import SimCluster
from simcluster.gpu import FakeGpus, install_gpus, uninstall_gpus
from simcluster.hardware import FakeHardware, install_hardware, uninstall_hardware
from simcluster.stack import (
    FakeStack,
    install_stack,
    limit_memlock,
    restore_memlock,
    uninstall_stack,
)

PROFILE = Path(__file__).resolve().parents[1] / "data" / "profiles" / "sim-software.yaml"
NODES = [f"node{i:02d}" for i in range(1, 9)]
NO_PEERMEM = ["nvidia_uvm", "mlx5_ib", "ib_uverbs", "mlx5_core", "ib_core"]


@pytest.fixture
def faulty(simcluster: SimCluster) -> Iterator[SimCluster]:
    memlock = None
    try:
        install_hardware(simcluster, {"node02": FakeHardware(firmware="20.31.1014")})
        for name in NODES:
            install_gpus(simcluster, name, FakeGpus(acs_on=name == "node06"))
            install_stack(simcluster, name, {
                "node03": FakeStack(nccl="2.18.3"),
                "node04": FakeStack(modules=NO_PEERMEM),
            }.get(name, FakeStack()))
        memlock = limit_memlock(simcluster, "node05", 64)
        simcluster.remove_tool("node07", "ibstat")
        yield simcluster
    finally:
        if memlock is not None:
            restore_memlock(simcluster, "node05", memlock)
        uninstall_stack(simcluster)
        uninstall_gpus(simcluster)
        uninstall_hardware(simcluster)


def test_each_software_fault_fails_its_own_check_and_node(
    pytester: pytest.Pytester, faulty: SimCluster, sim_inventory: Path
) -> None:
    record = pytester.path / "record.json"
    result = pytester.runpytest_subprocess(
        "--cluster", str(sim_inventory), "--profile", str(PROFILE), "-p", "no:cacheprovider", "-rA",
        "-m", "software or inter_node", f"--conformance-json={record}", timeout=240,
    )
    doc = json.loads(record.read_text())
    checks = {(c["check"], c["subject"]): c for c in doc["checks"]}
    expected = {(check, node): "passed" for node in NODES
                for check in ("preflight", "gpudirect", "memlock", "pcie_acs", "min_versions", "ports")}
    expected[("software_consistency", "cluster")] = "failed"
    expected[("min_versions", "node02")] = "failed"  # 20.31.1014 < 20.35.2000
    expected[("min_versions", "node03")] = "failed"  # NCCL 2.18.3 < 2.20
    expected[("min_versions", "node07")] = "failed"  # no ibstat: no HCA firmware found
    expected[("gpudirect", "node04")] = "failed"
    expected[("memlock", "node05")] = "failed"
    expected[("pcie_acs", "node06")] = "failed"
    expected[("preflight", "node07")] = "error"
    expected[("ports", "node07")] = "error"
    got = {key: checks[key]["outcome"] for key in expected if key in checks}
    assert set(expected) <= set(checks), sorted(set(expected) - set(checks))
    wrong = {key: (got[key], want) for key, want in expected.items() if got[key] != want}
    assert not wrong, f"{wrong}\n{result.stdout.str()[-6000:]}"

    def message(check: str, subject: str) -> str:
        return str(checks[(check, subject)]["message"])

    same = message("software_consistency", "cluster")
    assert "node02: HCA firmware 20.31.1014; 6 others 20.39.1002" in same, same
    assert "node07: HCA firmware not found; 6 others 20.39.1002" in same, same
    assert "node03: NCCL 2.18.3; 7 others 2.21.5" in same, same
    assert "NCCL 2.18.3 is older than the profile's minimum 2.20" in message("min_versions", "node03")
    assert "nvidia_peermem is not loaded" in message("gpudirect", "node04")
    assert "ulimit -l is 64 KiB" in message("memlock", "node05")
    acs = message("pcie_acs", "node06")
    assert "16:00.0 (above 17:00.0, 18:00.0): SrcValid+ ReqRedir+ CmpltRedir+ UpstreamFwd+" in acs, acs
    # The tool is missing once, up front, with its package; the check that needs it errors at once.
    pre = message("preflight", "node07")
    assert "ibstat (for inter_node.ports" in pre and "install ibstat (infiniband-diags) on node07" in pre, pre
    ports = message("ports", "node07")
    assert "preflight found ibstat not installed" in ports and checks[("ports", "node07")]["duration_s"] < 2, ports
    # The preflight records list the tools and versions found: the report header shows them.
    versions = doc["run"]["tool_versions"]
    assert versions["ibstat"] == ["50.0"] and "nccl" in versions, versions
