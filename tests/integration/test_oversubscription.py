"""Oversubscription on the simulated cluster: the alone figure from the sweep, the at-once batch under the cap.

Real iperf3 between the nodes (TCP: the profile sets no rdma_bandwidth), each node's client runs
logged by a wrapped iperf3 (simcluster.breaker), so the test sees what ran and what ran at once.
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
from pathlib import Path

import yaml
from simcluster import NodeBreaker, SimCluster
from simcluster.breaker import read_iperf3_runs

from pytest_fabric.checks import tcp as declared

PROFILE = """\
name: leaves-tcp
inter_node:
  pairs: all
  tcp_throughput: {min: 0.1 Gb/s, streams: 1, processes: 1, duration: 2 s}
  oversubscription: {min: 50%}
"""
# Every node's link in the run (tc tbf, Mbit/s): the sweep's figure and the at-once batch's both come
# through it, so their ratio is the shaping's (about 1) however loaded the machine is; unshaped, a
# veth pair carries what the CPU gives it at that moment, and a batch measured while the machine was
# busier than during the sweep read 23.6% against the 50% floor (load ~10 on 2 cores)
LINK_MBIT = 300


def test_oversubscription_reads_alone_from_the_sweep_and_runs_at_once_under_the_fanout(
    simcluster: SimCluster, break_node: NodeBreaker, tmp_path: Path
) -> None:
    """Four nodes on two leaves, --fabric-fanout 2 (one pair at a time). Before issue 21 the check
    ran each crossing pair alone again (2 runs after the sweep had measured them) and then both
    at once in threads of their own, whatever --fabric-fanout said."""
    nodes = simcluster.nodes[:4]
    inventory = simcluster.write_inventory(tmp_path / "inventory.yaml", nodes=nodes)
    document = yaml.safe_load(inventory.read_text())
    for index, entry in enumerate(document["nodes"]):
        entry["labels"] = {"leaf": f"leaf{index % 2 + 1}"}
    inventory.write_text(yaml.safe_dump(document, sort_keys=False))
    (tmp_path / "profile.yaml").write_text(PROFILE)
    with break_node.iperf3_runs(nodes), contextlib.ExitStack() as links:
        for node in nodes:
            links.enter_context(break_node.shaped(node, LINK_MBIT))
        result = subprocess.run(
            [sys.executable, "-m", "pytest", "--cluster", str(inventory), "--profile", str(tmp_path / "profile.yaml"),
             "-k", "test_tcp_throughput or oversubscription", "--fabric-fanout", "2", "-p", "no:cacheprovider",
             "--conformance-json", "record.json", "-q"],
            cwd=tmp_path, capture_output=True, text=True, timeout=300,
        )
        runs = [r for n in nodes for r in read_iperf3_runs(n)]
    output = result.stdout + result.stderr
    record = json.loads((tmp_path / "record.json").read_text())
    (check,) = [c for c in record["checks"] if c["check"] == "oversubscription"]
    assert check["outcome"] == "passed", output[-3000:]
    # its own runs: the oversubscription offset of the TCP block (slots 0 and 1 of a leaf round)
    own_ports = {declared.TCP_THROUGHPUT_PORTS.port(200 + slot) for slot in range(2)}
    own = [r for r in runs if r.port in own_ports]
    assert len(own) == 1, own  # one batch of fanout // 2 = 1 pair; alone is the sweep's figure
    assert "1 from the sweep" in check["message"] and "1 of 2 at once" in check["message"], check["message"]
    sweep = [r for r in runs if r.port is not None and r.port < declared.TCP_THROUGHPUT_PORTS.port(100)]
    assert len(sweep) == 6  # every pair once, in its round
