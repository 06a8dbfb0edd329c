"""NCCL held to its rails: a launcher whose nccl-tests output claims more than its rails carried is inconsistent.

Three simulated nodes, every pair measured by rdma_bandwidth (4 HDR rails at once, 784 Gb/s) and
nccl_allreduce (the stand-in's ring: 90 % of them). node01 runs a provider's wrapper in front of
its mpirun: every all_reduce it launches prints twice the bandwidth in half the time (1440 Gb/s of
busbw through 784 Gb/s of rails). The pair node01 launches fails as inconsistent on node01, both
figures and the tolerance named; the pairs node02 and node03 launch are consistent, the
cross-check noted in their record; rdma_bandwidth passes everywhere. One run of the real command
line, ~25 s.
"""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest
from simcluster import SimCluster
from simcluster.hardware import FakeHardware, hardware_installed, standin_launcher

CHEAT = "node01"
PROFILE = """name: sim-cross-checks
inter_node:
  rdma_bandwidth: {min: 50% line, size: 8 MiB, qps: 1, repeat: 1, duration: 1 s}
  nccl_allreduce: {min: 10 GB/s, size: 1 GiB}
  pairs: all
"""

# Runs the stand-in (kept under .real/, beside the model it reads); each row of all_reduce_perf's
# table at half the time and twice the bandwidth, and its average bus bandwidth doubled.
MPIRUN_WRAPPER = r"""#!/bin/sh
/usr/local/bin/.real/mpirun "$@" | awk '
/^ +[0-9]+ +[0-9]+ +[a-z]/ { $6 = $6 / 2; $7 = $7 * 2; $8 = $8 * 2; $10 = $10 / 2; $11 = $11 * 2; $12 = $12 * 2 }
/^# Avg bus bandwidth/ { $NF = $NF * 2 }
{ print }'
exit 0
"""


@pytest.fixture(scope="module")
def record(simcluster: SimCluster, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    work = tmp_path_factory.mktemp("cross_checks")
    nodes = simcluster.nodes[:3]
    inventory = simcluster.write_inventory(work / "inventory.yaml", nodes=nodes)
    profile = work / "profile.yaml"
    profile.write_text(PROFILE)
    with hardware_installed(simcluster, {n.name: FakeHardware() for n in nodes}):
        bindir = simcluster.node(CHEAT).bindir
        real = bindir / ".real"
        real.mkdir(exist_ok=True)
        (real / "fabric-hardware.json").write_text((bindir / "fabric-hardware.json").read_text())
        (real / "mpirun").write_text(standin_launcher("fabric_standin"))
        (real / "mpirun").chmod(0o755)
        simcluster.install_tool(CHEAT, "mpirun", MPIRUN_WRAPPER)
        try:
            result = subprocess.run(
                [sys.executable, "-m", "pytest", "--cluster", str(inventory), "--profile", str(profile),
                 "-k", "test_rdma_bandwidth or test_nccl_allreduce", "-p", "no:cacheprovider",
                 "--conformance-json", "record.json", "-q", "-rfE"],
                cwd=work, capture_output=True, text=True, timeout=300,
            )
        finally:
            simcluster.install_tool(CHEAT, "mpirun", standin_launcher("fabric_standin"))  # for uninstall
            for name in ("mpirun", "fabric-hardware.json"):
                (real / name).unlink(missing_ok=True)
            real.rmdir()
    data: dict[str, Any] = json.loads((work / "record.json").read_text())
    data["_stdout"] = result.stdout + result.stderr
    return data


def _checks(record: dict[str, Any], check: str) -> dict[str, dict[str, Any]]:
    found = {c["subject"]: c for c in record["checks"] if c["check"] == check}
    assert found, record["_stdout"][-3000:]
    return found


def test_the_launcher_whose_nccl_figure_its_rails_cannot_carry_is_inconsistent(record: dict[str, Any]) -> None:
    nccl = _checks(record, "nccl_allreduce")
    assert set(nccl) == {"node01<->node02", "node02<->node03", "node03<->node01"}, record["_stdout"][-3000:]
    for subject, check in nccl.items():
        (found,) = check["extra"]["cross_checks"]
        assert (found["name"], found["tolerance"]) == ("nccl vs rails", 0.10)
        assert found["bound"] == pytest.approx(4 * 196, rel=0.03)  # the pair's four rails, as rdma_bandwidth measured
        if subject.startswith(CHEAT):
            assert check["outcome"] == "failed", check["message"]
            assert found["status"] == "inconsistent" and found["node"] == CHEAT
            assert check["message"].startswith(f"{subject}: inconsistent on {CHEAT}: {CHEAT}: nccl vs rails: NCCL busbw 17")
            assert found["figure"] == pytest.approx(1440, rel=0.02)
        else:
            assert check["outcome"] == "passed", check["message"]
            assert found["status"] == "consistent" and found["figure"] == pytest.approx(720, rel=0.02)
    assert {c["outcome"] for c in _checks(record, "rdma_bandwidth").values()} == {"passed"}
