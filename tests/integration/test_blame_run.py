"""One attribution model for every pair check (issue 29), on the simulated cluster: the cases where
the run sent back a healthy node, or no one, before pytest_fabric/judge/blame.py judged the run."""

from __future__ import annotations

import json
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from simcluster import NodeBreaker, SimCluster
from simcluster.hardware import FakeHardware, default_ports, hardware_installed


# --fabric-no-witness: the port and interface counters read before and after every run (a round trip
# to each end per run, up to ~80 runs and retest samples a test here) corroborate a figure, which these
# tests do not judge (tests/integration/test_corroboration_run.py does); the model reads the same figures
def _run(work: Path, inventory: Path, profile: str, select: str) -> dict[str, Any]:
    (work / "profile.yaml").write_text(profile)
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "--cluster", str(inventory), "--profile", "profile.yaml", "-p", "no:cacheprovider",
         "--conformance-json", "record.json", "-q", "-rfE", "--fabric-no-witness", "-k", select],
        cwd=work, capture_output=True, text=True, timeout=600,
    )
    record: dict[str, Any] = json.loads((work / "record.json").read_text())
    record["_output"] = (result.stdout + result.stderr)[-4000:]
    return record


def _verdicts(record: dict[str, Any]) -> dict[str, str]:
    return {c["subject"]: c["extra"]["attribution"]["verdict"] for c in record["checks"]
            if c["check"] == "attribution" and c["outcome"] in ("passed", "failed")}


# iperf3 -t 1: node03's pairs lie ~85% under the rest, 7-11 of the model's spreads where its bar is
# ~4 (a 2 s run told nothing more, and every second is paid 15 times in the sweep and 15 in the
# outlier check's re-measurements, node03's five pairs one after another)
NOISY = """\
name: noisy
inter_node:
  pairs: all
  tcp_throughput: {min: 0.5 Gb/s, streams: 1, processes: 1, duration: 1 s}
  outlier: {max_below_median: 7%}
  attribution: {retest: true}
"""


def test_a_node_at_a_fraction_of_its_noisy_peers_is_sent_back_alone_and_again_the_same(
    simcluster: SimCluster, break_node: NodeBreaker, tmp_path: Path
) -> None:
    """Six nodes, real iperf3 (healthy pairs several Gb/s, noisy on a busy machine), node03 shaped
    to 800 Mbit/s: above the 0.5 Gb/s floor, far below its peers. Before: nothing sent back, or
    every node, depending on the run; the outlier check found node03's 87% "within the spread" of
    all 15 pairs, its own five among them.

    The first run has the outlier check too; the second only what attribution judges (the sweep
    and attribution's own retests: the outlier check's re-measurements are no figure of the model's
    unless the model asks for the same pair), on the same cluster, node03 still shaped."""
    inventory = simcluster.write_inventory(tmp_path / "inventory.yaml", nodes=simcluster.nodes[:6])
    found = []
    with break_node.shaped("node03", 800):
        for attempt, select in enumerate(["test_tcp_throughput or attribution",
                                          "(test_tcp_throughput or attribution) and not outlier"]):
            work = tmp_path / f"run{attempt}"
            work.mkdir()
            found.append(_run(work, inventory, NOISY, select))
    for record in found:
        assert record["run"]["send_back"] == "node03", record["_output"]
        assert _verdicts(record)["node03"] == "node fault", record["_output"]
    # the same verdict both times: the same nodes sent back, each in the same class, and no other
    # node blamed. A path named a link fault on real iperf3 noise (listed apart, sent back by no
    # one) may come and go between runs: in a full run at load ~5 node05<->node06 was one in the
    # second run and not the first; it is asserted never to take a node with it
    faults = [{n: v for n, v in _verdicts(r).items() if v in ("node fault", "unstable")} for r in found]
    assert faults[0] == faults[1] == {"node03": "node fault"}, [r["_output"] for r in found]
    for record in found:
        assert set(_verdicts(record).values()) <= {"node fault", "healthy", "link fault"}, record["_output"]
    # each end judged against the pairs it is not in: node03's five pairs fail, no other pair does
    outliers = {c["subject"]: c for c in found[0]["checks"] if c["check"] == "tcp_throughput_outlier"}
    assert len(outliers) == 15, found[0]["_output"]
    assert {s for s, c in outliers.items() if c["outcome"] != "passed"} == {s for s in outliers if "node03" in s}, \
        found[0]["_output"]
    slow = next(c for s, c in outliers.items() if "node03" in s)
    assert "the 10 pairs without node03" in slow["message"], slow["message"]


NCCL = """\
name: nccl-only
intra_node:
  gpu_count: 8
inter_node:
  link_layer: infiniband
  ports: 4
  rdma_bandwidth: {min: 90% line, size: 8 MiB, qps: 2, repeat: 1, duration: 1 s}
  nccl_allreduce: {min: 60 GB/s, size: 1 GiB}
  pairs: all
  attribution: {retest: true}
"""


def test_a_node_only_multi_node_nccl_finds_slow_is_named(stand_in_records: dict[str, dict[str, Any]]) -> None:
    """Every rail healthy; node06's GPUs or PCIe hold every NCCL ring it is in to under half (a
    fault only NCCL sees). Before: attribution read rdma_bandwidth alone and sent back no one."""
    record = stand_in_records["nccl"]
    assert record["run"]["send_back"] == "node06", record["_output"]
    assert _verdicts(record) == {"node05": "healthy", "node06": "node fault", "node07": "healthy", "node08": "healthy"}
    node06 = next(c for c in record["checks"] if c["check"] == "attribution" and c["subject"] == "node06")
    assert "nccl_allreduce" in node06["message"] and "Send node06 to the provider" in node06["message"]


# repeat 2, the fewest that show two levels inside one figure: each of node02's figures is one run at
# each level. Its repeats are on two levels in every figure, so the model measures every pair of this
# 4-node series again in both retest steps (2 x 6 pairs x 3 samples): every repeat is paid ~18 times
FLAPPING = """\
name: flapping
inter_node:
  link_layer: infiniband
  ports: 1
  rdma_bandwidth: {min: 90% line, size: 8 MiB, qps: 1, repeat: 2, duration: 1 s}
  pairs: all
  attribution: {retest: true}
"""


@pytest.fixture(scope="module")
def stand_in_records(simcluster: SimCluster, tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    """The flapping rail's run on node01-04 and the NCCL-only run on node05-08 at once, under one
    hardware model: each run locks only its own nodes, and each mostly waits on its stand-ins' -D
    seconds and its nodes' answers (the two ran one after the other before; same faults, same checks)."""
    hardware = {n.name: FakeHardware(ports=default_ports()[:1]) for n in simcluster.nodes[:4]}
    hardware["node02"] = FakeHardware(ports=default_ports()[:1], flapping_fraction=0.5)
    hardware |= {n.name: FakeHardware() for n in simcluster.nodes[4:8]}
    hardware["node06"] = FakeHardware(nccl_efficiency=0.35)
    runs = {
        "flapping": (simcluster.nodes[:4], FLAPPING, "test_rdma_bandwidth or attribution"),
        "nccl": (simcluster.nodes[4:8], NCCL, "test_nccl_allreduce or attribution"),
    }

    def one(name: str) -> dict[str, Any]:
        nodes, profile, select = runs[name]
        work = tmp_path_factory.mktemp(name)
        return _run(work, simcluster.write_inventory(work / "inventory.yaml", nodes=nodes), profile, select)

    with hardware_installed(simcluster, hardware), ThreadPoolExecutor(max_workers=2) as pool:
        return dict(zip(runs, pool.map(one, runs)))


def test_a_flapping_rail_is_its_node_unstable_and_its_peers_stay(stand_in_records: dict[str, dict[str, Any]]) -> None:
    """node02's rail retrains 4X <-> 2X: its runs alternate 196 and 98 Gb/s around the 180 Gb/s floor.
    Before: "cannot attribute ... spread near the floor" on both ends, and a healthy peer sent back."""
    record = stand_in_records["flapping"]
    assert record["run"]["send_back"] == "node02", record["_output"]
    assert _verdicts(record) == {"node01": "healthy", "node02": "unstable", "node03": "healthy", "node04": "healthy"}
