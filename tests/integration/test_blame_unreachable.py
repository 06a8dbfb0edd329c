"""A failure is charged to the node the evidence points at (pytest_fabric/probes/reachability.py), on the
simulated cluster: node03's sshd dies or its link goes down mid-run, and node02, whose iperf3 client or
mpirun only waited on node03, is not sent back (node03 is listed as not measured, apart)."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import yaml
from simcluster import NodeBreaker, SimCluster
from simcluster.hardware import hardware_installed

PROFILES = Path(__file__).resolve().parents[1] / "data" / "profiles"


def _run(work: Path, inventory: Path, profile: Path, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "pytest", "--cluster", str(inventory), "--profile", str(profile), "-p", "no:cacheprovider",
         "--conformance-json", "record.json", "-q", "-rfE", *args],
        cwd=work, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )


def _finish(run: subprocess.Popen[str], work: Path) -> dict[str, Any]:
    try:
        out, _ = run.communicate(timeout=300)
    finally:
        if run.poll() is None:
            run.kill()
            run.wait()
    record: dict[str, Any] = json.loads((work / "record.json").read_text())
    record["_stdout"] = out
    return record


def _when_client_runs(cluster: SimCluster, client: str, peer: str, run: subprocess.Popen[str]) -> None:
    """Return once ``client``'s iperf3 client towards ``peer`` runs."""
    address = cluster.node(peer).address
    deadline = time.monotonic() + 120
    while not any(f"iperf3 -c {address}" in cmd for _, cmd in cluster.processes(client)):
        assert run.poll() is None and time.monotonic() < deadline, "the client never ran"
        time.sleep(0.05)


def _tcp_profile(work: Path, seconds: int) -> Path:
    profile = work / "tcp.yaml"
    profile.write_text(f"name: tcp\ninter_node:\n  tcp_throughput: {{min: 0.5 Gb/s, streams: 1, duration: {seconds} s}}\n"
                       "  pairs: all\n")
    return profile


def _node_connect_timeout(inventory: Path, node: str, seconds: float) -> None:
    """Give one node of ``inventory`` its own connect_timeout (docs/inventory.md: per-node settings)."""
    doc = yaml.safe_load(inventory.read_text())
    (entry,) = [n for n in doc["nodes"] if n["name"] == node]
    entry["connect_timeout"] = seconds
    inventory.write_text(yaml.safe_dump(doc, sort_keys=False))


def _pair(record: dict[str, Any], check: str, a: str, b: str) -> dict[str, Any]:
    return next(c for c in record["checks"] if c["check"] == check and set(c["subject"].split("<->")) == {a, b})


def test_an_iperf3_client_whose_peer_sshd_dies_mid_run_charges_the_peer(
    simcluster: SimCluster, break_node: NodeBreaker, tmp_path: Path
) -> None:
    names = [n.name for n in simcluster.nodes[:3]]
    inventory = simcluster.write_inventory(tmp_path / "inventory.yaml", nodes=names)
    run = _run(tmp_path, inventory, _tcp_profile(tmp_path, 4))
    _when_client_runs(simcluster, "node02", "node03", run)
    break_node.stop_sshd("node03")
    record = _finish(run, tmp_path)
    pair = _pair(record, "tcp_throughput", "node02", "node03")
    assert pair["outcome"] == "error", record["_stdout"][-3000:]
    assert pair["extra"]["error_node"] == "node03", pair["message"]
    # charged to node03, which could not be measured: listed apart with why, never sent back (issue 29)
    assert not record["run"]["send_back"] and list(record["run"]["not_measured"]) == ["node03"], record["_stdout"][-3000:]


def test_an_iperf3_client_timing_out_towards_a_peer_whose_link_went_down_charges_the_peer(
    simcluster: SimCluster, break_node: NodeBreaker, tmp_path: Path
) -> None:
    # one pair: its client waits out its whole timeout (duration + 30 s), then node03 is asked. Every
    # command towards node03 after its link went down waits out its channel open (connect_timeout, then
    # 3x more: 12 s at the inventory's 3 s) for the server's stop, the probe and the lock's release;
    # node03 alone gets 1.5 s (a connect here takes ~0.25 s at load 10 on 2 cores): ~60 s less a run.
    inventory = simcluster.write_inventory(tmp_path / "inventory.yaml", nodes=["node02", "node03"])
    _node_connect_timeout(inventory, "node03", 1.5)
    run = _run(tmp_path, inventory, _tcp_profile(tmp_path, 1))
    _when_client_runs(simcluster, "node02", "node03", run)
    break_node.link_down("node03")
    record = _finish(run, tmp_path)
    pair = _pair(record, "tcp_throughput", "node02", "node03")
    assert pair["outcome"] == "error", record["_stdout"][-3000:]
    assert pair["extra"]["error_node"] == "node03", pair["message"]
    assert pair["message"].startswith("node node03: unreachable (") and "node02's iperf3 client to it failed" in pair["message"]
    # charged to node03, which could not be measured: listed apart with why, never sent back (issue 29)
    assert not record["run"]["send_back"] and list(record["run"]["not_measured"]) == ["node03"], record["_stdout"][-3000:]


def test_an_mpirun_launch_failing_on_a_host_whose_sshd_died_charges_that_host(
    simcluster: SimCluster, break_node: NodeBreaker, tmp_path: Path
) -> None:
    names = [n.name for n in simcluster.nodes[:3]]
    inventory = simcluster.write_inventory(tmp_path / "inventory.yaml", nodes=names)
    with hardware_installed(simcluster, {}):
        break_node.stop_sshd("node03")
        record = _finish(_run(tmp_path, inventory, PROFILES / "sim-rdma.yaml", "-k", "nccl_allreduce"), tmp_path)
    launched = _pair(record, "nccl_allreduce", "node02", "node03")
    assert launched["outcome"] == "error", record["_stdout"][-3000:]
    assert launched["extra"]["error_node"] == "node03", launched["message"]
    assert "node02's mpirun could not start its daemon there (ssh: Connection refused)" in launched["message"]
    assert _pair(record, "nccl_allreduce", "node01", "node02")["outcome"] == "passed"
    # charged to node03, which could not be measured: listed apart with why, never sent back (issue 29)
    assert not record["run"]["send_back"] and list(record["run"]["not_measured"]) == ["node03"], record["_stdout"][-3000:]
