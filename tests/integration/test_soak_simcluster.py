"""``--soak`` on the simulated cluster (issue 31): a link that slows after the second cycle, or a stand-in
GPU that starts throttling under the soak's load, fails the soak naming the cycle and the time; a
healthy soak passes.

Two nodes, one pair, tcp_throughput for 1 s a cycle. The slowed link stays above the check's floor
(10 Mb/s): only the soak's drift judgement (soak.max_drift) can catch it, as it would a link that
falls from 90 to 70 Gb/s overnight against a 50 Gb/s floor.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import time
from datetime import datetime

import pytest
from simcluster import NodeBreaker, SimCluster
from simcluster.fabric_run import run_with_record
from simcluster.gpu import FakeGpus, install_gpus, uninstall_gpus
from simcluster.slurm import SlurmSim

PROFILE = """name: soak-link
inter_node:
  tcp_throughput: {min: 10 Mb/s, streams: 1, duration: 1 s, source: a floor the slowed link stays above}
soak: {max_drift: 80%, interval: 2 s}
"""
ONLY_TCP = ("-k", "tcp_throughput and not outlier")


@pytest.fixture
def two_nodes(pytester: pytest.Pytester, simcluster: SimCluster) -> tuple[str, str]:
    a, b = simcluster.nodes[:2]
    simcluster.write_inventory(pytester.path / "inventory.yaml", nodes=[a, b])
    pytester.makefile(".yaml", **{"soak-link": PROFILE})
    return a.name, b.name


def test_a_link_slowing_after_the_second_cycle_fails_the_soak_with_the_cycle_and_time(
    pytester: pytest.Pytester, simcluster: SimCluster, break_node: NodeBreaker, two_nodes: tuple[str, str]
) -> None:
    a, b = two_nodes
    # one iperf3 client run a cycle: the first two at full speed, every later one at 100 Mbit/s
    with break_node.noisy(a, b, [10_000, 10_000] + [100] * 40):
        result, record = run_with_record(pytester, pytester.path / "inventory.yaml", pytester.path / "soak-link.yaml",
                                         *ONLY_TCP, "--soak", "12s", "--html=report.html", "--self-contained-html")
    out = result.stdout.str()
    soak = record["run"]["soak"]
    assert soak["cycles"] >= 3, out
    assert record["run"]["verdict"] == "reject", out
    tcp = soak["figures"][0]
    mbps = [p[2] * {"Mb/s": 1, "Gb/s": 1000}[tcp["unit"]] for p in tcp["points"]]
    assert min(mbps) > 10, mbps  # above its 10 Mb/s floor all along: only the drift judges it
    drift = next(f for f in soak["judgement"]["faults"] if f["kind"] == "drift")
    assert (drift["cycle"], drift["subject"]) == (3, f"{a}<->{b}"), soak["judgement"]
    assert "drifted" in drift["message"] and "in cycle 3" in drift["message"] and drift["when"] in out
    assert out.count("REJECT:") == 1
    page = (pytester.path / "report.html").read_text()
    assert "fabric-soak-fault" in page and "cycle 3" in page


def test_a_healthy_soak_passes(pytester: pytest.Pytester, two_nodes: tuple[str, str]) -> None:
    result, record = run_with_record(pytester, pytester.path / "inventory.yaml", pytester.path / "soak-link.yaml",
                                     *ONLY_TCP, "--soak", "4s")
    soak = record["run"]["soak"]
    assert soak["cycles"] >= 2 and soak["judgement"]["faults"] == [], result.stdout.str()
    assert record["run"]["verdict"] == "accept", result.stdout.str()
    assert {s["node"] for s in soak["telemetry"]["series"]} == set(two_nodes)


GPU_PROFILE = """name: soak-gpu
inter_node:
  mtu: {min: 1500, source: Ethernet minimum}
soak: {interval: 1 s, load: 2 s}
"""


def test_a_gpu_that_starts_throttling_under_the_load_fails_the_soak_with_its_cycle_and_time(
    pytester: pytest.Pytester, simcluster: SimCluster
) -> None:
    """The soak's GEMM load runs between cycles; after the second cycle GPU 1 of the node starts to show
    HW Slowdown under it. The soak fails naming the node, the GPU, the cycle and the time."""
    node = simcluster.nodes[2]
    inventory = simcluster.write_inventory(pytester.path / "inventory.yaml", nodes=[node])
    pytester.makefile(".yaml", **{"soak-gpu": GPU_PROFILE})
    record = pytester.path / "record.json"
    try:
        install_gpus(simcluster, node, FakeGpus(count=2, gemm_report_s=0.5))
        run = subprocess.Popen(
            [sys.executable, "-m", "pytest", "--cluster", str(inventory), "--profile", "soak-gpu.yaml",
             "-p", "no:cacheprovider", "-k", "test_mtu", "--soak", "10s", f"--conformance-json={record}"],
            cwd=pytester.path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
            env={**os.environ, "FABRIC_TEST_CHECKOUT": "1"})
        try:
            deadline, cycles = time.monotonic() + 60, 0
            while time.monotonic() < deadline and run.poll() is None and cycles < 2:
                time.sleep(0.1)
                with contextlib.suppress(OSError, ValueError):
                    cycles = json.loads(record.read_text())["run"].get("soak", {}).get("cycles", 0)
            throttled_from = time.time()
            install_gpus(simcluster, node, FakeGpus(count=2, gemm_report_s=0.5, throttle_under_load={1: ["hw_slowdown"]}))
            output, _ = run.communicate(timeout=90)
        finally:
            if run.poll() is None:
                run.kill()
                run.communicate()
    finally:
        uninstall_gpus(simcluster, node)
    soak = json.loads(record.read_text())["run"]["soak"]
    assert cycles >= 2 and soak["cycles"] >= 3, output[-3000:]
    faults = [f for f in soak["judgement"]["faults"] if f["kind"] == "flag"]
    assert faults, soak["judgement"]
    first = min(faults, key=lambda f: f["at_s"])
    assert first["subject"] == node.name and first["what"].startswith("gpu1 throttled"), first
    assert first["cycle"] >= 2 and "hw slowdown" in first["message"] and first["when"] in output
    started = datetime.fromisoformat(soak["started"]).timestamp()
    assert started + first["at_s"] >= throttled_from - 1  # not before the GPU began to throttle
    load = soak["load"]
    assert load["runs"] >= 2 and load["not_run"] == {}
    assert any(s["series"] == "gpu0 SM clock" for s in soak["telemetry"]["series"])  # the basic set: the stand-in's
    assert json.loads(record.read_text())["run"]["verdict"] == "reject"


def test_a_soak_runs_the_same_way_under_slurm(pytester: pytest.Pytester, slurm_cluster: SlurmSim,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """Two Slurm nodes, no time written: the allocation takes the soak's length; cycles and telemetry go
    through the nodes' job steps, and no job is left."""
    slurm_cluster.ensure_slurmds()
    monkeypatch.setenv("SLURM_CONF", str(slurm_cluster.conf))
    for name in [k for k in os.environ if k.startswith("SLURM_") and k != "SLURM_CONF"]:
        monkeypatch.delenv(name)
    nodes = slurm_cluster.nodes[:2]
    inventory = slurm_cluster.write_inventory(pytester.path / "inventory.yaml", nodes=nodes,
                                              extra={"slurm": {"partition": "sim", "wait": 10}})
    pytester.makefile(".yaml", **{"soak-gpu": GPU_PROFILE.replace("load: 2 s", "load: 1 s")})
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "--cluster", str(inventory), "--profile", "soak-gpu.yaml", "-p",
         "no:cacheprovider", "-k", "test_mtu", "--soak", "5s", "--conformance-json=record.json"],
        cwd=pytester.path, capture_output=True, text=True, timeout=180, env={**os.environ, "FABRIC_TEST_CHECKOUT": "1"})
    record = json.loads((pytester.path / "record.json").read_text())["run"]
    soak = record["soak"]
    assert soak["cycles"] >= 2 and record["verdict"] == "accept", run.stdout[-3000:]
    assert {s["node"] for s in soak["telemetry"]["series"]} == set(nodes)
    assert set(soak["load"]["not_run"]) == set(nodes)  # no dcgmproftester there: said per node, the soak goes on
    assert slurm_cluster.jobs() == []
