"""Rails by identity, ports by name, perftest run as it is meant to be, and a leaf at 2:1.

Each fault is one a real fabric has and the simulated one was too kind to show: a port Down on
one node (rails used to be zipped by position, so most ran cross-rail), a storage HCA on one node
(``ports: 4`` used to be an equality), a rail below 11.5 Gb/s (5000 iterations ran into the 120 s
timeout: an error, not a failure with its number), a p99 far above a fine typical latency, and a
leaf whose uplinks carry half of what its nodes offer (each node used to offer one rail of four,
and only leaves (0,1), (2,3) were paired).
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from simcluster import SimCluster
from simcluster.hardware import FakeHardware, FakePort, default_ports, hardware_installed

PROFILE = """name: rails
inter_node:
  link_layer: infiniband
  ports: 4
  port_state: Active
  rdma_bandwidth: {min: 90% line, size: 8 MiB, qps: 4, repeat: 1, duration: 2 s}
  rdma_latency: {max: 2.5 us, p99: 4.2 us, iterations: 10000}
  pairs: all
"""


def run(work: Path, inventory: Path, profile: str, *args: str, timeout: int = 600) -> dict:
    (work / "profile.yaml").write_text(profile)
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "--cluster", str(inventory), "--profile", str(work / "profile.yaml"),
         "-p", "no:cacheprovider", "--conformance-json", "record.json", "-q", *args],
        cwd=work, capture_output=True, text=True, timeout=timeout,
    )
    record: dict = json.loads((work / "record.json").read_text())
    record["_stdout"] = result.stdout
    return record


def checks(record: dict, check: str) -> dict[str, dict]:
    return {c["subject"]: c for c in record["checks"] if c["check"] == check}


def pair(found: dict[str, dict], x: str, y: str) -> dict:
    """The pair's check whichever node the schedule made the client."""
    return found[f"{x}<->{y}"] if f"{x}<->{y}" in found else found[f"{y}<->{x}"]


def outcomes(record: dict, check: str) -> dict[str, str]:
    return {s: c["outcome"] for s, c in checks(record, check).items()}


def _port1_down() -> list[FakePort]:
    """A node's four ports with mlx5_1 Down (Polling): a cable out, as ibstat shows it."""
    ports = default_ports()
    ports[1] = FakePort(device="mlx5_1", netdev="ib1", state="Down", phys_state="Polling")
    return ports


@pytest.fixture(scope="module")
def record(simcluster: SimCluster, tmp_path_factory: pytest.TempPathFactory) -> dict:
    work = tmp_path_factory.mktemp("rails")
    nodes = simcluster.nodes[:4]
    inventory = simcluster.write_inventory(work / "inventory.yaml", nodes=nodes)
    down = _port1_down()
    slow = default_ports()
    slow[2] = FakePort(device="mlx5_2", netdev="ib2", rdma_bw_gbps=5.0)
    hardware = {
        "node01": FakeHardware(rdma_lat_p99_us=9.0),  # typical 1.6 us, the tail is not
        "node02": FakeHardware(ports=down),
        "node03": FakeHardware(ports=[*default_ports(), FakePort(device="mlx5_4", netdev="ib4")]),  # storage HCA
        # runs last as long as real ones: 5000 x 4 QPs x 8 MiB at 5 Gb/s would be 4.5 minutes
        "node04": FakeHardware(ports=slow, perftest_real_time=True),
    }
    with hardware_installed(simcluster, hardware):
        return run(work, inventory, PROFILE, "-k", "test_ports or port_state or test_rdma_bandwidth or test_rdma_latency")


def test_a_down_port_fails_its_rail_by_name_and_the_other_rails_pair_like_with_like(record: dict) -> None:
    bandwidth = checks(record, "rdma_bandwidth")
    with_node02 = {s for s in bandwidth if "node02" in s}
    assert len(with_node02) == 3 and {bandwidth[s]["outcome"] for s in with_node02} == {"failed"}
    message = pair(bandwidth, "node01", "node02")["message"]
    assert "rail mlx5_1/1: mlx5_1/1 on node02 is Down (Polling)" in message
    # the three other rails ran same to same, none shifted onto its neighbour
    assert "mlx5_0/1 19" in message and "mlx5_2/1 19" in message and "mlx5_3/1 19" in message
    assert "->" not in message.split(": ", 1)[1]


def test_a_pairs_rails_run_at_once_so_a_host_path_they_share_shows_in_each_rails_figure(
    simcluster: SimCluster, tmp_path: Path
) -> None:
    """node02's four 200G rails share a 300 Gb/s host path (a PCIe switch), modelled in the stand-in by
    sharing it among the ib_write_bw clients that run at the same moment. Rail by rail (before the
    rails ran at once) each had the path alone and passed at ~196 Gb/s; at once each gets a share."""
    nodes = simcluster.nodes[:2]
    inventory = simcluster.write_inventory(tmp_path / "inventory.yaml", nodes=nodes)
    hardware = {"node01": FakeHardware(), "node02": FakeHardware(host_bw_cap_gbps=300)}
    profile = PROFILE.replace("repeat: 1, duration: 2 s", "repeat: 2, duration: 2 s")
    with hardware_installed(simcluster, hardware):
        record = run(tmp_path, inventory, profile, "-k", "test_rdma_bandwidth")
    (bandwidth,) = checks(record, "rdma_bandwidth").values()
    message = bandwidth["message"]
    assert "4 rails at once" in message, message
    figures = {m.group(1): float(m.group(2)) for m in re.finditer(r"(mlx5_\d/1) ([\d.]+) Gb/s", message.split("rails: ", 1)[1])}
    assert set(figures) == {f"mlx5_{i}/1" for i in range(4)}, message
    # each rail measured while at least one other loaded the shared path; together no more than the path
    assert all(value <= 151 for value in figures.values()), figures
    assert sum(figures.values()) <= 300 * 1.02, figures
    assert bandwidth["outcome"] == "failed"  # each rail judged on its own figure: under 90% of 200G


def test_a_storage_hca_on_one_node_neither_fails_ports_nor_becomes_a_rail(record: dict) -> None:
    assert outcomes(record, "ports") == {"node01": "passed", "node02": "failed", "node03": "passed", "node04": "passed"}
    assert "mlx5_4/1 Active" in checks(record, "ports")["node03"]["message"]
    healthy = pair(checks(record, "rdma_bandwidth"), "node01", "node03")
    assert healthy["outcome"] == "passed" and "mlx5_4" not in healthy["message"]


def test_a_rail_below_11_gbps_fails_with_its_number_instead_of_timing_out(record: dict) -> None:
    bandwidth = checks(record, "rdma_bandwidth")
    slow = pair(bandwidth, "node01", "node04")
    assert slow["outcome"] == "failed", slow["message"]
    assert "worst rail mlx5_2/1" in slow["message"] and "for 2 s" in slow["message"]
    assert slow["measured"]["value"] < 6  # ~4.9 Gb/s, measured, not a timeout
    assert not {s for s, c in bandwidth.items() if c["outcome"] == "error"}


def test_p99_is_judged_on_the_p99_column_of_every_rail(record: dict) -> None:
    latency = checks(record, "rdma_latency")
    tail = pair(latency, "node01", "node03")
    assert tail["outcome"] == "failed"
    assert "p99 measured 9" in tail["message"] and "10000 iterations" in tail["message"]
    assert "max measured" not in tail["message"]  # typical latency is fine: only the p99 bound failed
    for rail in ("mlx5_0/1", "mlx5_1/1", "mlx5_2/1", "mlx5_3/1"):
        assert rail in tail["message"]
    assert pair(latency, "node03", "node04")["outcome"] == "passed"


def test_ports_the_profile_names_are_the_subjects_and_the_only_ports_judged(
    simcluster: SimCluster, tmp_path: Path
) -> None:
    nodes = simcluster.nodes[:3]
    inventory = simcluster.write_inventory(tmp_path / "inventory.yaml", nodes=nodes)
    down = _port1_down()
    # node03's storage HCA enumerates first: a sorted list would call it port0
    storage_first = [FakePort(device="mlx5_10", netdev="ib9"), *default_ports()]
    profile = PROFILE.replace("  ports: 4\n", "  ports: {names: [mlx5_0, mlx5_1, mlx5_2, mlx5_3]}\n")
    with hardware_installed(simcluster, {"node02": FakeHardware(ports=down), "node03": FakeHardware(ports=storage_first)}):
        record = run(tmp_path, inventory, profile, "-k", "test_ports or port_state")
    assert outcomes(record, "ports") == {"node01": "passed", "node02": "failed", "node03": "passed"}
    assert "mlx5_1/1 is Down (Polling)" in checks(record, "ports")["node02"]["message"]
    state = outcomes(record, "port_state")
    assert set(state) == {f"node0{n}:mlx5_{i}/1" for n in (1, 2, 3) for i in range(4)}
    assert {s for s, o in state.items() if o != "passed"} == {"node02:mlx5_1/1"}


def test_a_leaf_at_2_to_1_fails_oversubscription_once_every_node_offers_every_rail(
    simcluster: SimCluster, tmp_path: Path
) -> None:
    """Three leaves of two nodes (4 x 200G each); leaf3's uplinks carry 800 of its 1600 Gb/s."""
    nodes = simcluster.nodes[:6]
    inventory = simcluster.write_inventory(tmp_path / "inventory.yaml", nodes=nodes)
    document = yaml.safe_load(inventory.read_text())
    leaves = {}
    for index, entry in enumerate(document["nodes"]):
        leaves[entry["name"]] = f"leaf{index // 2 + 1}"
        entry["labels"] = {"leaf": leaves[entry["name"]]}
    inventory.write_text(yaml.safe_dump(document, sort_keys=False))
    # real-time runs of 3 s: the eight flows of a round overlap however loaded this machine is
    hardware = {n.name: FakeHardware(leaf=leaves[n.name], perftest_real_time=True) for n in nodes}
    profile = (
        "name: leafy\ninter_node:\n  link_layer: infiniband\n  ports: 4\n"
        "  rdma_bandwidth: {min: 10 Gb/s, size: 8 MiB, qps: 2, repeat: 1, duration: 3 s}\n"
        "  oversubscription: {min: 90%}\n"
    )
    with hardware_installed(simcluster, hardware, leaf_uplink_gbps={"leaf3": 800}):
        record = run(tmp_path, inventory, profile, "-k", "oversubscription")
    check = checks(record, "oversubscription")["cluster"]
    assert check["outcome"] == "failed", check["message"]
    # the worst round is one with leaf3, every node offering its four rails
    assert check["message"].split("; ", 1)[1].startswith(("leaf1<->leaf3", "leaf2<->leaf3", "leaf3<->"))
    assert "8 rails at once" in check["message"]
    assert 40 < check["measured"]["value"] < 65  # ~51%: 800 Gb/s of uplink for 1568 offered
    # every leaf pair was exercised, not only (leaf1, leaf2)
    for pair in ("leaf1<->leaf2", "leaf3"):
        assert pair in check["message"]


def test_roce_rdma_tests_run_in_the_lossless_class_not_tc0(simcluster: SimCluster, tmp_path: Path) -> None:
    """Two RoCE nodes, PFC on priority 3 only, on a congested fabric where a lossy class keeps 40%:
    perftest with no --tclass runs in TC 0 and measures the congestion, not the lossless class."""
    nodes = simcluster.nodes[:2]
    inventory = simcluster.write_inventory(tmp_path / "inventory.yaml", nodes=nodes)
    roce = [FakePort(device=f"mlx5_{i}", netdev=f"ens{i}", rate_gbps=100, link_layer="Ethernet") for i in range(2)]
    hardware = {n.name: FakeHardware(ports=[FakePort(**vars(p)) for p in roce], roce_lossy_bw_fraction=0.4) for n in nodes}
    profile = (
        "name: lossless\ninter_node:\n  link_layer: ethernet\n  ports: 2\n"
        "  roce: {pfc_priorities: [3], ecn: true, trust: dscp}\n"
        "  rdma_bandwidth: {min: 90 Gb/s, size: 8 MiB, qps: 2, repeat: 1, duration: 1 s}\n"
        "  rdma_latency: {max: 3 us}\n"
    )
    with hardware_installed(simcluster, hardware):
        record = run(tmp_path, inventory, profile, "-k", "test_rdma_bandwidth or test_rdma_latency")
    (bandwidth,) = checks(record, "rdma_bandwidth").values()
    assert bandwidth["outcome"] == "passed", bandwidth["message"]
    assert "--tclass=106" in bandwidth["message"]  # DSCP 26 with ECT: priority 3
    (latency,) = checks(record, "rdma_latency").values()
    assert latency["outcome"] == "passed" and "--tclass=106" in latency["message"]


def test_above_the_device_test_limit_one_test_per_node_judges_each_port_and_names_the_one_down(
    simcluster: SimCluster, tmp_path: Path
) -> None:
    """Fails before --fabric-device-tests-up-to: 4,096 nodes of 8 ports were 98,304 port tests of three checks."""
    nodes = simcluster.nodes[:3]
    inventory = simcluster.write_inventory(tmp_path / "inventory.yaml", nodes=nodes)
    down = _port1_down()
    profile = PROFILE.replace("  port_state: Active\n", "  port_state: Active\n  port_rate: 200 Gb/s\n")
    with hardware_installed(simcluster, {"node02": FakeHardware(ports=down)}):
        record = run(tmp_path, inventory, profile, "-k", "port_state or port_rate", "--fabric-device-tests-up-to", "2")
    state = checks(record, "port_state")
    assert set(state) == {"node01:ports", "node02:ports", "node03:ports"}
    assert {s: c["outcome"] for s, c in state.items()} == {
        "node01:ports": "passed", "node02:ports": "failed", "node03:ports": "passed"}
    failed = state["node02:ports"]["message"]
    # the failing port by its own subject, and only that one: the three Active ones are not failures
    assert "node02:port1: measured Down (Polling)" in failed, failed
    assert "node02:port0" not in failed and "node02:port2" not in failed
    # a passing node's record still says every port it judged
    assert all(f"node01:port{i}: measured Active" in state["node01:ports"]["message"] for i in range(4))
    assert set(checks(record, "port_rate")) == set(state)
