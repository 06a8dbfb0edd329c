"""The inter-node layer against stand-in RDMA hardware: the right subjects fail, the right node is blamed.

One run of the real command line on six simulated nodes with four faults at once:
node03's first port trained at 100G, node04's symbol errors grow, the cable
between node05 and node06 is slow, and node01<->node02 has extra latency.
The JSON record is read to check every verdict, subject by subject.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from simcluster import SimCluster
from simcluster.hardware import FakeHardware, FakePort, default_ports, hardware_installed

PROFILE = Path(__file__).resolve().parents[1] / "data" / "profiles" / "sim-rdma.yaml"
# the four-fault run: attribution over rdma_bandwidth only (what test_attribution_blames_the_node_and_the_cable reads)
RECORD_PROFILE = PROFILE.with_name("sim-rdma-rdma-attribution.yaml")
NODES = 6


# --fabric-no-witness: the port counters read before and after every perftest run (a round trip to
# each end per run: the sweep's 15 pairs and the model's retests, 4 rails each) corroborate a figure,
# which no test on this record judges (tests/integration/test_corroboration_run.py does); error_counters
# is a check of its own and still runs, and the model reads the same figures
@pytest.fixture(scope="module")
def record(simcluster: SimCluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict]:
    import subprocess
    import sys

    work = tmp_path_factory.mktemp("inter_node")
    nodes = simcluster.nodes[:NODES]
    inventory = simcluster.write_inventory(work / "inventory.yaml", nodes=nodes)
    hardware = {
        "node03": FakeHardware(ports=[FakePort(rate_gbps=100), *default_ports()[1:]]),
        "node04": FakeHardware(ports=[FakePort(counter_growth={"SymbolErrorCounter": 7}), *default_ports()[1:]]),
        "node05": FakeHardware(slow_peers={"node06": 0.5}),
        "node01": FakeHardware(slow_peer_latency={"node02": 3.0}),
    }
    with hardware_installed(simcluster, hardware):
        result = subprocess.run(
            [sys.executable, "-m", "pytest", "--cluster", str(inventory), "--profile", str(RECORD_PROFILE), "-m", "inter_node",
             "-p", "no:cacheprovider", "--conformance-json", "record.json", "-q", "-rfE", "--fabric-no-witness"],
            cwd=work, capture_output=True, text=True, timeout=400,
        )
        leftovers = {n.name: simcluster.processes(n) for n in nodes}
    data = json.loads((work / "record.json").read_text())
    data["_stdout"] = result.stdout
    data["_leftovers"] = leftovers
    yield data


def outcomes(record: dict, check: str) -> dict[str, str]:
    return {c["subject"]: c["outcome"] for c in record["checks"] if c["check"] == check}


def failing(record: dict, check: str) -> set[str]:
    return {s for s, o in outcomes(record, check).items() if o in ("failed", "error")}


def test_port_trained_at_100g_fails_port_rate_for_that_port_only(record: dict) -> None:
    assert failing(record, "port_rate") == {"node03:port0"}
    message = next(c["message"] for c in record["checks"] if c["check"] == "port_rate" and c["subject"] == "node03:port0")
    assert "100 Gb/s" in message and "200 Gb/s" in message
    assert len(outcomes(record, "port_rate")) == NODES * 4


def test_growing_symbol_errors_fail_that_port_and_name_the_counter(record: dict) -> None:
    assert failing(record, "error_counters") == {"node04:port0"}
    check = next(c for c in record["checks"] if c["check"] == "error_counters" and c["subject"] == "node04:port0")
    assert "SymbolErrorCounter" in check["message"]


def test_slow_cable_fails_rdma_bandwidth_for_exactly_that_pair(record: dict) -> None:
    assert failing(record, "rdma_bandwidth") == {"node05<->node06"}
    check = next(c for c in record["checks"] if c["check"] == "rdma_bandwidth" and c["subject"] == "node05<->node06")
    # '90% line' is resolved against what the ports report, and both numbers are in the message
    assert "90% line of the 200 Gb/s the port reports" in check["message"]


def test_port_at_100g_passes_its_own_line_rate_but_is_a_peer_outlier(record: dict) -> None:
    # node03's worst rail does 98% of its own (100G) line, so the floor holds;
    # against its peers (196 Gb/s) it is far below the median.
    assert not {s for s in failing(record, "rdma_bandwidth") if "node03" in s}
    slow = failing(record, "rdma_bandwidth_outlier")
    assert {s for s in slow if "node03" in s} == {s for s in outcomes(record, "rdma_bandwidth_outlier") if "node03" in s}
    assert slow - {s for s in slow if "node03" in s} == {"node05<->node06"}


def test_latency_fails_for_the_slow_pair_and_stands_out(record: dict) -> None:
    assert failing(record, "rdma_latency") == {"node01<->node02"}
    assert failing(record, "rdma_latency_outlier") == {"node01<->node02"}


def test_attribution_blames_the_node_and_the_cable(record: dict) -> None:
    verdicts = {c["subject"]: c for c in record["checks"] if c["check"] == "attribution"}
    assert {s: c["outcome"] for s, c in verdicts.items() if c["outcome"] != "passed"}.keys() == {"node03", "node05", "node06"}
    assert "node fault" in verdicts["node03"]["message"] and "Send node03 to the provider" in verdicts["node03"]["message"]
    assert "link fault" in verdicts["node05"]["message"] and "node05 and node06" in verdicts["node05"]["message"]
    assert "node05->node06 rdma_bandwidth measured alone" in verdicts["node05"]["message"]  # before the verdict
    assert verdicts["node01"]["outcome"] == "passed"


def test_nccl_fails_on_the_slow_cable_and_scaling_shows_it(record: dict) -> None:
    # NCCL's figure is derived from the rails: node03's port at 100G holds every ring through node03 at
    # 4 x 100 Gb/s x 0.9 = 45 GB/s, under the 80 GB/s floor, as the slow cable holds node05<->node06.
    node03 = {s for s in outcomes(record, "nccl_allreduce") if "node03" in s}
    assert len(node03) == NODES - 1
    assert failing(record, "nccl_allreduce") == {"node05<->node06"} | node03
    # 2 and 4 nodes scale; at 6 nodes the job spans the slow node05<->node06 cable.
    assert outcomes(record, "scaling_efficiency") == {"cluster": "failed"}
    check = next(c for c in record["checks"] if c["check"] == "scaling_efficiency")
    assert "worst at 6 nodes" in check["message"] and "4 nodes" in check["message"]


def test_nothing_is_left_running(record: dict) -> None:
    assert record["_leftovers"] == {n: [] for n in record["_leftovers"]}
    assert record["run"]["verdict"] == "reject"


def roce_ports() -> list[FakePort]:
    return [
        FakePort(device=f"mlx5_{i}", netdev=f"ens{i}", rate_gbps=100, link_layer="Ethernet", active_mtu=4096)
        for i in range(2)
    ]


def _roce_run(simcluster: SimCluster, work: Path) -> subprocess.CompletedProcess[str]:
    """Four RoCE nodes on two leaves; node02 trusts PCP instead of DSCP and has no PFC (hardware: _roce_and_ports)."""
    import yaml

    nodes = simcluster.nodes[:4]
    inventory = simcluster.write_inventory(work / "inventory.yaml", nodes=nodes)
    document = yaml.safe_load(inventory.read_text())
    for index, entry in enumerate(document["nodes"]):
        entry["labels"] = {"leaf": f"leaf{index % 2 + 1}"}
    # node04 names its ports, one of which it does not have
    document["nodes"][3]["rdma_ports"] = ["mlx5_0", "mlx5_1/1", "mlx5_7"]
    inventory.write_text(yaml.safe_dump(document, sort_keys=False))
    return subprocess.run(
        [sys.executable, "-m", "pytest", "--cluster", str(inventory), "--profile",
         str(PROFILE.with_name("sim-roce.yaml")), "-m", "inter_node", "-p", "no:cacheprovider",
         "--conformance-json", "record.json", "-q"],
        cwd=work, capture_output=True, text=True, timeout=300,
    )


def _port_run(simcluster: SimCluster, work: Path) -> subprocess.CompletedProcess[str]:
    """Per-node port checks on node05-07 (hardware: _roce_and_ports)."""
    inventory = simcluster.write_inventory(work / "inventory.yaml", nodes=simcluster.nodes[4:7])
    return subprocess.run(
        [sys.executable, "-m", "pytest", "--cluster", str(inventory), "--profile", str(PROFILE),
         "-k", "link_layer or test_ports or port_state or port_rate or mtu", "-p", "no:cacheprovider",
         "--conformance-json", "record.json", "-q"],
        cwd=work, capture_output=True, text=True, timeout=300,
    )


def _roce_and_ports() -> dict[str, FakeHardware]:
    """node01-04: RoCE, node02 misconfigured, node03's two ports behind a 120 Gb/s host path
    (each does 98 Gb/s alone, not both at once). node05-07: one healthy, one with a port Down/Polling
    and a 2048-byte MTU port, one whose ports are Ethernet in an InfiniBand profile."""
    hardware = {f"node0{i}": FakeHardware(ports=roce_ports()) for i in range(1, 5)}
    hardware["node02"] = FakeHardware(ports=roce_ports(), roce_trust="pcp", roce_pfc=[])
    hardware["node03"] = FakeHardware(ports=roce_ports(), host_bw_cap_gbps=120)
    down = default_ports()
    down[3] = FakePort(device="mlx5_3", netdev="ib3", state="Down", phys_state="Polling", rate_gbps=10)
    down[1] = FakePort(device="mlx5_1", netdev="ib1", active_mtu=2048)
    hardware["node06"] = FakeHardware(ports=down)
    hardware["node07"] = FakeHardware(ports=[
        FakePort(device=f"mlx5_{i}", netdev=f"ens{i}", link_layer="Ethernet") for i in range(4)
    ])
    return hardware


@pytest.fixture(scope="module")
def roce_and_port_records(simcluster: SimCluster, tmp_path_factory: pytest.TempPathFactory) -> tuple[dict, dict]:
    """The RoCE run on node01-04 and the port run on node05-07 at once, under one hardware model:
    each run locks only its own nodes, and a run is mostly its start-up and the nodes' answers."""
    works = [tmp_path_factory.mktemp("roce"), tmp_path_factory.mktemp("ports")]
    with hardware_installed(simcluster, _roce_and_ports()), ThreadPoolExecutor(max_workers=2) as pool:
        for done in [pool.submit(run, simcluster, work) for run, work in zip((_roce_run, _port_run), works)]:
            done.result()
    roce, ports = (json.loads((work / "record.json").read_text()) for work in works)
    return roce, ports


@pytest.fixture(scope="module")
def roce_record(roce_and_port_records: tuple[dict, dict]) -> dict:
    return roce_and_port_records[0]


def test_roce_error_counters_are_read_without_perfquery_and_pass(roce_record: dict) -> None:
    # sim-roce extends base, so error_counters runs on Ethernet ports: perfquery cannot open a MAD
    # port there; rdma statistic and ethtool -S are read instead, and no stand-in counter grew.
    found = outcomes(roce_record, "error_counters")
    assert found.pop("node04:mlx5_7/1") == "failed"  # the inventory names a port node04 lacks
    assert found and set(found.values()) == {"passed"}, found
    assert {s.split(":")[0] for s in found} == {f"node0{i}" for i in range(1, 5)}


def test_roce_settings_fail_only_the_misconfigured_node(roce_record: dict) -> None:
    assert outcomes(roce_record, "roce") == {"node01": "passed", "node02": "failed", "node03": "passed", "node04": "passed"}
    message = next(c["message"] for c in roce_record["checks"] if c["check"] == "roce" and c["subject"] == "node02")
    assert "trust" in message and "pcp" in message and "pfc_priorities" in message


def test_aggregate_fails_where_rails_share_a_bottleneck_and_oversubscription_passes(roce_record: dict) -> None:
    aggregate = outcomes(roce_record, "aggregate_rdma_bandwidth")
    assert {s for s, o in aggregate.items() if o == "failed"} == {s for s in aggregate if "node03" in s}
    assert {o for s, o in aggregate.items() if "node03" not in s} == {"passed"}
    check = next(c for c in roce_record["checks"] if c["check"] == "aggregate_rdma_bandwidth" and "node03" in c["subject"])
    assert "2 rails at once: 120.0 Gb/s" in check["message"]
    # in rounds of disjoint pairs, like every pair check: 4 nodes, 2 pairs at once
    assert {c["extra"].get("measured_as") for c in roce_record["checks"] if c["check"] == "aggregate_rdma_bandwidth"} == {
        "all 2 at once"
    }
    assert outcomes(roce_record, "oversubscription") == {"cluster": "passed"}
    check = next(c for c in roce_record["checks"] if c["check"] == "oversubscription")
    assert "2 cross-leaf pairs" in check["message"]
    assert outcomes(roce_record, "link_layer") == {f"node0{i}": "passed" for i in range(1, 5)}


def test_ports_named_in_the_inventory_are_the_subjects(roce_record: dict) -> None:
    rates = outcomes(roce_record, "port_rate")
    assert {s: o for s, o in rates.items() if s.startswith("node04")} == {
        "node04:mlx5_0/1": "passed",
        "node04:mlx5_1/1": "passed",
        "node04:mlx5_7/1": "failed",
    }
    assert {s for s in rates if s.startswith("node01")} == {"node01:port0", "node01:port1"}
    message = next(c["message"] for c in roce_record["checks"] if c["subject"] == "node04:mlx5_7/1" and c["check"] == "port_rate")
    assert "has no RDMA port mlx5_7/1" in message and "mlx5_0/1" in message


@pytest.fixture(scope="module")
def port_record(roce_and_port_records: tuple[dict, dict]) -> dict:
    return roce_and_port_records[1]


def test_port_checks_fail_exactly_the_broken_ports(port_record: dict) -> None:
    assert failing(port_record, "port_state") == {"node06:port3"} | {f"node07:port{i}" for i in range(4)}
    assert failing(port_record, "ports") == {"node06", "node07"}
    assert failing(port_record, "link_layer") == {"node07"}
    # node07 has no InfiniBand port to read an IB MTU from: that cannot be measured, an error
    assert outcomes(port_record, "mtu") == {"node05": "passed", "node06": "failed", "node07": "error"}
    state = next(c for c in port_record["checks"] if c["check"] == "port_state" and c["subject"] == "node06:port3")
    assert "Down (Polling)" in state["message"]
    ports = next(c for c in port_record["checks"] if c["check"] == "ports" and c["subject"] == "node06")
    assert "measured 3" in ports["message"] and "mlx5_3/1 Down/Polling" in ports["message"]
    layer = next(c for c in port_record["checks"] if c["check"] == "link_layer" and c["subject"] == "node07")
    assert "Ethernet x4" in layer["message"]


def test_oversubscribed_spine_fails_oversubscription(simcluster: SimCluster, tmp_path: Path) -> None:
    """Four RoCE nodes on two leaves joined by a spine that carries 150 Gb/s for everyone:
    each cross-leaf pair does 98 Gb/s alone, but two at once share the spine."""
    import subprocess
    import sys

    import yaml

    nodes = simcluster.nodes[:4]
    inventory = simcluster.write_inventory(tmp_path / "inventory.yaml", nodes=nodes)
    document = yaml.safe_load(inventory.read_text())
    leaves = {}
    for index, entry in enumerate(document["nodes"]):
        leaves[entry["name"]] = f"leaf{index % 2 + 1}"
        entry["labels"] = {"leaf": leaves[entry["name"]]}
    inventory.write_text(yaml.safe_dump(document, sort_keys=False))
    hardware = {n.name: FakeHardware(ports=roce_ports()[:1], leaf=leaves[n.name]) for n in nodes}
    profile = tmp_path / "blocking.yaml"
    profile.write_text(
        "name: blocking\ninter_node:\n  link_layer: ethernet\n  ports: 1\n"
        "  rdma_bandwidth: {min: 10 Gb/s, size: 8 MiB, repeat: 1, duration: 1 s}\n  oversubscription: {min: 90%}\n"
    )
    with hardware_installed(simcluster, hardware, spine_gbps=150):
        subprocess.run(
            [sys.executable, "-m", "pytest", "--cluster", str(inventory), "--profile", str(profile),
             "-k", "oversubscription", "-p", "no:cacheprovider", "--conformance-json", "record.json", "-q"],
            cwd=tmp_path, capture_output=True, text=True, timeout=300,
        )
    record = json.loads((tmp_path / "record.json").read_text())
    assert outcomes(record, "oversubscription") == {"cluster": "failed"}
    check = next(c for c in record["checks"] if c["check"] == "oversubscription")
    assert "2 cross-leaf pairs" in check["message"] and "150.0 Gb/s all at once" in check["message"]
