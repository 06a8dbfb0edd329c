"""``--soak`` on the simulated cluster (issue 31): a link that slows after the second cycle fails the soak,
naming the cycle and the time; a healthy soak passes.

Two nodes, one pair, tcp_throughput for 1 s a cycle. The slowed link stays above the check's floor
(10 Mb/s): only the soak's drift judgement (soak.max_drift) can catch it, as it would a link that
falls from 90 to 70 Gb/s overnight against a 50 Gb/s floor.
"""

from __future__ import annotations

import pytest
from simcluster import NodeBreaker, SimCluster
from simcluster.fabric_run import run_with_record

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
