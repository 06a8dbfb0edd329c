"""Error counters and RoCE QoS on the simulated cluster, with the faults a real fabric has.

InfiniBand (sim-rdma, which extends base): errors counted only by the switch port facing an
HCA, congestion-only growth, a switch relay error (not a fault), a port whose perfquery prints
a header and no counters.  RoCE (the bundled roce-small): perfquery cannot open a MAD port on an
Ethernet link layer, so counters come from rdma statistic and ethtool -S; one node's sequence
errors grow, one prints no counters; per-port PFC/ECN differences and ECN off fail by name.
"""

from __future__ import annotations

import json
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from simcluster import SimCluster
from simcluster.hardware import FakeHardware, FakePort, default_ports, hardware_installed

from pytest_fabric.parsers import ethtool, iblinkinfo, perfquery, rdma_statistic

SIM_RDMA = Path(__file__).resolve().parents[1] / "data" / "profiles" / "sim-rdma.yaml"


def run(simcluster: SimCluster, work: Path, nodes: int, profile: str, *args: str, first_node: int = 0) -> dict:
    inventory = simcluster.write_inventory(work / "inventory.yaml", nodes=simcluster.nodes[first_node:first_node + nodes])
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "--cluster", str(inventory), "--profile", profile, "-p", "no:cacheprovider",
         "--conformance-json", "record.json", "-q", *args],
        cwd=work, capture_output=True, text=True, timeout=300,
    )
    record = json.loads((work / "record.json").read_text())
    record["_stdout"] = done.stdout + done.stderr
    return record


def checks(record: dict, check: str) -> dict[str, dict]:
    return {c["subject"]: c for c in record["checks"] if c["check"] == check}


def port(found: dict[str, dict], node: str, index: int, device: str) -> dict:
    """The check of a node's port, whether subjects are slots (node:port0) or names (node:mlx5_0/1)."""
    for subject in (f"{node}:port{index}", f"{node}:{device}/1"):
        if subject in found:
            return found[subject]
    raise KeyError(f"no subject for {node} {device} in {sorted(found)}")


def ssh(cluster: SimCluster, node: str, command: str) -> str:
    done = subprocess.run(cluster.ssh_argv(node, command), capture_output=True, text=True, timeout=20, check=False)
    assert done.returncode == 0, done.stderr
    return done.stdout


def ib_hardware(switch_node: str = "node02", busy_node: str = "node03") -> dict[str, FakeHardware]:
    switch_side = default_ports()
    switch_side[0].switch_counter_growth = {"SymbolErrorCounter": 4}  # host -> switch direction
    switch_side[1].empty_counters = True
    # The reading before the run times out; the port has lifetime errors from before the run,
    # which must not be judged as this run's.
    switch_side[2].fail_reads = 1
    switch_side[2].counters = {"SymbolErrorCounter": 50}
    busy = default_ports()
    busy[0].counter_growth = {"PortXmitWait": 5000, "PortXmitDiscards": 2, "PortRcvSwitchRelayErrors": 3}
    return {switch_node: FakeHardware(ports=switch_side), busy_node: FakeHardware(ports=busy)}


def test_standins_print_switch_side_and_roce_counters_our_parsers_read(simcluster: SimCluster) -> None:
    hardware = ib_hardware()
    hardware["node04"] = FakeHardware(ports=[FakePort(device="mlx5_0", netdev="ens1f0", rate_gbps=100,
                                                      link_layer="Ethernet", counter_growth={"out_of_sequence": 2})])
    with hardware_installed(simcluster, hardware):
        (ca,) = [p for p in iblinkinfo.parse_iblinkinfo(ssh(simcluster, "node02", "iblinkinfo -C mlx5_0 -P 1 -D 0"))]
        assert ca.node_type == "CA" and ca.peer_lid is not None and ca.peer_port is not None
        switch = ssh(simcluster, "node02", f"perfquery -x -C mlx5_0 -P 1 {ca.peer_lid} {ca.peer_port}")
        (block,) = perfquery.parse_perfquery(switch)
        assert (block.lid, block.port) == (ca.peer_lid, ca.peer_port) and block.counters["SymbolErrorCounter"] == 4
        roce = subprocess.run(simcluster.ssh_argv("node04", "perfquery -x -C mlx5_0 -P 1"), capture_output=True,
                              text=True, timeout=20, check=False)
        assert roce.returncode == 255 and "Failed to open 'mlx5_0' port '1'" in roce.stderr
        (stat,) = rdma_statistic.parse_rdma_statistic(ssh(simcluster, "node04", "rdma statistic show link mlx5_0/1"))
        assert stat.counters["out_of_sequence"] == 2
        stats = ethtool.parse_ethtool_stats(ssh(simcluster, "node04", "ethtool -S ens1f0"))
        assert stats["rx_crc_errors_phy"] == 0 and "out_of_sequence" not in stats
        ecn = ssh(simcluster, "node04", "cat /sys/class/net/ens1f0/ecn/roce_np/enable/3 /sys/class/net/ens1f0/ecn/roce_rp/enable/3")
        assert ecn.split() == ["1", "1"]
        assert ssh(simcluster, "node04", "ls /sys/class/net/lo/mtu").strip()  # real entries still there
    assert "ens1f0" not in ssh(simcluster, "node04", "ls /sys/class/net")  # uninstalled: the real sysfs again


def test_infiniband_counters_both_ends_and_classes(simcluster: SimCluster, tmp_path: Path) -> None:
    # The two runs at once, each on three nodes of its own with the same faults (node02 and node03,
    # node05 and node06): a port's reads, failed or growing, are counted per node.
    hardware = {**ib_hardware(), **ib_hardware("node05", "node06")}
    with hardware_installed(simcluster, hardware), ThreadPoolExecutor(max_workers=2) as pool:
        first = pool.submit(run, simcluster, tmp_path, 3, str(SIM_RDMA), "-k", "error_counters")
        second = pool.submit(run, simcluster, tmp_path / "strict", 3, str(SIM_RDMA), "-k", "error_counters",
                             "--expect", "inter_node.error_counters.congestion_max=100", first_node=3)
        record, strict = first.result(), second.result()
    found = checks(record, "error_counters")
    assert len(found) == 12, record["_stdout"][-3000:]
    switch_side = port(found, "node02", 0, "mlx5_0")
    assert switch_side["outcome"] == "failed", switch_side["message"]
    assert "peer LID" in switch_side["message"] and "SymbolErrorCounter +" in switch_side["message"]
    empty = port(found, "node02", 1, "mlx5_1")
    assert empty["outcome"] == "error" and "none of the counters this check judges" in empty["message"]
    no_baseline = port(found, "node02", 2, "mlx5_2")
    assert no_baseline["outcome"] == "error" and "no counter reading from before the run" in no_baseline["message"]
    assert "timed out" in no_baseline["message"]
    busy = port(found, "node03", 0, "mlx5_0")
    assert busy["outcome"] == "passed", busy["message"]
    assert "PortXmitWait" in busy["message"] and "PortRcvSwitchRelayErrors" in busy["message"]
    bad = {s for s, c in found.items() if c["outcome"] != "passed"}
    assert bad == {switch_side["subject"], empty["subject"], no_baseline["subject"]}
    # With a congestion bound the same growth fails, on that port only (and names the bound).
    strict_found = checks(strict, "error_counters")
    strict_busy = port(strict_found, "node06", 0, "mlx5_0")
    assert strict_busy["outcome"] == "failed" and "congestion_max" in strict_busy["message"]
    strict_switch_side = port(strict_found, "node05", 0, "mlx5_0")
    assert {s for s, c in strict_found.items() if c["outcome"] == "failed"} == {strict_busy["subject"], strict_switch_side["subject"]}


def roce_port(device: str = "mlx5_0", netdev: str = "ens1f0", **kwargs: object) -> FakePort:
    return FakePort(device=device, netdev=netdev, rate_gbps=100, link_layer="Ethernet", active_mtu=4096, **kwargs)  # type: ignore[arg-type]


def test_roce_small_counters_and_qos_per_port(simcluster: SimCluster, tmp_path: Path) -> None:
    hardware = {
        "node01": FakeHardware(ports=[roce_port()]),
        # sequence errors (loss on a lossless fabric) and congestion drops grow
        "node02": FakeHardware(ports=[roce_port(counter_growth={"out_of_sequence": 3, "rx_discards_phy": 50})]),
        # rdma statistic prints nothing; and ECN is off
        "node03": FakeHardware(ports=[roce_port(empty_counters=True)], roce_ecn=[]),
        # two RoCE netdevs: the second has PFC and ECN off; plus an InfiniBand port (IPoIB ib0)
        "node04": FakeHardware(ports=[roce_port(), roce_port("mlx5_1", "ens2f0", roce_pfc=[], roce_ecn=[]),
                                      FakePort(device="mlx5_2", netdev="ib0")]),
    }
    with hardware_installed(simcluster, hardware):
        record = run(simcluster, tmp_path, 4, "roce-small", "-k", "error_counters or test_roce")
    counters = checks(record, "error_counters")
    assert {s: c["outcome"] for s, c in counters.items()} == {
        port(counters, "node01", 0, "mlx5_0")["subject"]: "passed",
        port(counters, "node02", 0, "mlx5_0")["subject"]: "failed",
        port(counters, "node03", 0, "mlx5_0")["subject"]: "error",
        port(counters, "node04", 0, "mlx5_0")["subject"]: "passed",
    }, record["_stdout"][-3000:]
    failed = port(counters, "node02", 0, "mlx5_0")["message"]
    assert "out_of_sequence +" in failed and "rx_discards_phy +" in failed  # the fault, and congestion beside it
    assert "rdma statistic" in port(counters, "node03", 0, "mlx5_0")["message"]
    roce = checks(record, "roce")
    assert {s: c["outcome"] for s, c in roce.items()} == {
        "node01": "passed", "node02": "passed", "node03": "failed", "node04": "failed"}
    assert "ecn" in roce["node03"]["message"] and "off" in roce["node03"]["message"]
    message = roce["node04"]["message"]
    assert "ens2f0: none" in message and "ens1f0: 3" in message and "ens2f0: off" in message
    assert "ib0" not in message
