"""A read on a shared mount whose usual layout peer cannot be reached (issue 19, on the simulated cluster).

node01 reads files a peer laid out; its first peer in inventory order is node02. With node02's
sshd stopped (break_node), node02's own tests error, and node01's read is laid out by the next
reachable peer, node03: node02's outage stays node02's, never node01's. Before issue 19 node01
errored and was sent back with node02 (shown then only over MockTransport, in
tests/unit/test_probes_storage.py).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from simcluster import NodeBreaker, SimCluster
from simcluster.mounts import SimMounts

PROFILE = Path(__file__).resolve().parents[1] / "data" / "profiles" / "sim-storage-mounts.yaml"


def test_an_unreachable_layout_peer_is_passed_over_and_the_reader_is_not_blamed(
    pytester: pytest.Pytester, simcluster: SimCluster, break_node: NodeBreaker
) -> None:
    nodes = [n.name for n in simcluster.nodes[:3]]
    with SimMounts(simcluster) as mounts:
        path = mounts.shared(nodes)
        inventory = simcluster.write_inventory(
            pytester.path / "inventory.yaml", nodes=nodes,
            extra={"storage": {"mounts": [{"path": path, "fstype": "ext4", "shared": True}]}},
        )
        record_path = pytester.path / "record.json"
        with break_node.stopped("node02"):
            pytester.runpytest_subprocess(
                "--cluster", str(inventory), "--profile", str(PROFILE), "-p", "no:cacheprovider", "-rA",
                f"--conformance-json={record_path}", "-k", "sequential_read", timeout=240,
            )
    record = json.loads(record_path.read_text())
    reads = {c["subject"].split(":")[0]: c for c in record["checks"] if c["check"] == "sequential_read"}
    assert reads["node02"]["outcome"] == "error", reads["node02"]["message"]
    node01 = reads["node01"]
    assert node01["outcome"] == "passed", node01["message"]
    assert node01["extra"]["read_from"] == {"laid_out_by": "node03", "cache": "other node"}
    # node02 alone (node[01-02] before issue 19), and as not measured, not sent back (issue 29)
    assert not record["run"]["send_back"] and list(record["run"]["not_measured"]) == ["node02"], record["run"]
