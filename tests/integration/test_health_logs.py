"""xid_errors, pcie_errors and link_history on the simulated cluster: each fails for its own fault,
naming the GPU or port, and sends back only the node that has it; healthy stand-ins pass.

One run of the three checks on five nodes: node01 logged an Xid 79 on one GPU, node02's GPU 1
replays on every read of its counter, node03's mlx5_1 went down 40 times before the run
(LinkDownedCounter) and three times in the kernel log, node04 is healthy, and node05's kernel log
cannot be read (dmesg_restrict, no journal files): its log checks error with the fix.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from simcluster import SimCluster
from simcluster.fabric_run import run_with_record
from simcluster.gpu import FakeGpus, install_gpus, uninstall_gpus
from simcluster.hardware import (
    FakeHardware,
    FakePort,
    default_ports,
    install_hardware,
    uninstall_hardware,
)
from simcluster.health import (
    GPU_BUS_IDS,
    FakeHealth,
    install_health,
    link_line,
    uninstall_health,
    xid_line,
)

from pytest_fabric.report.summary import nodeset

PROFILE = Path(__file__).resolve().parents[1] / "data" / "profiles" / "sim-health.yaml"
CHECKS = ("xid_errors", "pcie_errors", "link_history")


@pytest.fixture
def faulty(simcluster: SimCluster) -> Iterator[list[str]]:
    names = [n.name for n in simcluster.nodes[:5]]
    xid, replays, flaps, healthy, unreadable = names
    # two GPUs, NICs and ports a node: each read is a command over SSH, and two show one of each faulty
    ports = default_ports()[:2]
    ports[1] = FakePort(device="mlx5_1", netdev="ib1", counters={"LinkDownedCounter": 40})
    logs = {
        xid: FakeHealth(kernel_log=[*FakeHealth().kernel_log, xid_line("0000:2a:00", 79, 120)], gpus=2, nics=2),
        flaps: FakeHealth(kernel_log=[*FakeHealth().kernel_log, *(link_line("mlx5_1", 1, "down", 900 - 60 * i,
                                                                            pci="0000:29:00.0") for i in range(3))],
                          gpus=2, nics=2),
        unreadable: FakeHealth(dmesg_restricted=True, journal=False, gpus=2, nics=2),
    }
    try:
        install_hardware(simcluster, {name: FakeHardware(ports=ports if name == flaps else default_ports()[:2])
                                      for name in names})
        for name in names:
            install_gpus(simcluster, name, FakeGpus(count=2, nics=2, replays={1: (0, 500)} if name == replays else {}))
            install_health(simcluster, name, logs.get(name, FakeHealth(gpus=2, nics=2)))
        yield names
    finally:
        for name in names:
            uninstall_health(simcluster, name)
        uninstall_gpus(simcluster)
        uninstall_hardware(simcluster)


def _outcomes(record: dict[str, Any], check: str) -> dict[str, tuple[str, str]]:
    return {c["subject"]: (c["outcome"], str(c["message"])) for c in record["checks"] if c["check"] == check}


def test_each_check_fails_its_faulty_node_by_gpu_or_port_and_only_that_node(
    pytester: pytest.Pytester, simcluster: SimCluster, faulty: list[str]
) -> None:
    xid, replays, flaps, healthy, unreadable = faulty
    inventory = simcluster.write_inventory(pytester.path / "inventory.yaml", nodes=faulty)
    result, record = run_with_record(pytester, inventory, PROFILE, "-k", " or ".join(CHECKS), timeout=180)
    outcomes = {check: _outcomes(record, check) for check in CHECKS}
    assert {check: {n: o for n, (o, _) in found.items()} for check, found in outcomes.items()} == {
        "xid_errors": {xid: "failed", replays: "passed", flaps: "passed", healthy: "passed", unreadable: "error"},
        "pcie_errors": {xid: "passed", replays: "failed", flaps: "passed", healthy: "passed", unreadable: "passed"},
        "link_history": {xid: "passed", replays: "passed", flaps: "failed", healthy: "passed", unreadable: "error"},
    }, result.stdout.str()[-4000:]
    message = outcomes["xid_errors"][xid][1]
    assert f"{xid} GPU 0000:2a:00: measured 1" in message, message
    assert "NVRM: Xid (PCI:0000:2a:00): 79" in message and "read with journalctl -k" in message, message
    message = outcomes["pcie_errors"][replays][1]
    assert f"{replays} GPU {GPU_BUS_IDS[1]}: replays_per_minute measured" in message, message
    assert f"{replays} GPU {GPU_BUS_IDS[0]}" not in message, message
    message = outcomes["link_history"][flaps][1]
    assert f"{flaps} mlx5_1/1: link_down_events_max measured 3" in message, message
    assert f"{flaps} mlx5_1/1: link_downed_max measured 40" in message, message
    assert "mlx5_0/1" not in message, message
    message = outcomes["xid_errors"][unreadable][1]
    assert "journalctl -k: No journal files were found." in message, message
    assert "dmesg: dmesg: read kernel buffer failed: Operation not permitted" in message, message
    assert "kernel.dmesg_restrict=0" in message, message
    # each fault sends back its own node, never the healthy one; an unreadable log measured nothing:
    # that node is listed apart, with why and the fix (issue 29)
    assert record["run"]["send_back"] == nodeset([xid, replays, flaps]), record["run"]
    assert list(record["run"]["not_measured"]) == [unreadable], record["run"]
