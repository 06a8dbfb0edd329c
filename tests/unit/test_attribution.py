"""Attribution: the right node or link is blamed, and nothing else is."""

from __future__ import annotations

import itertools

from pytest_fabric.attribution import attribute

NODES = [f"n{i}" for i in range(8)]
ALL = list(itertools.combinations(NODES, 2))


def test_a_node_bad_with_every_peer_is_a_node_fault() -> None:
    bad = [p for p in ALL if "n3" in p]
    result = attribute(NODES, ALL, bad)
    assert result["n3"].verdict == "node fault"
    assert "Send n3 to the provider" in result["n3"].message
    assert all(result[n].verdict == "ok" for n in NODES if n != "n3")


def test_a_single_bad_pair_is_a_link_fault_of_both_ends() -> None:
    result = attribute(NODES, ALL, [("n5", "n6")], retest=lambda node, helper: True)
    assert result["n5"].verdict == result["n6"].verdict == "link fault"
    assert "between n5 and n6" in result["n5"].message
    assert [n for n in NODES if result[n].verdict != "ok"] == ["n5", "n6"]
    assert result["n5"].retests and "good on retest" in result["n5"].retests[0]


def test_a_node_fault_and_a_link_fault_together() -> None:
    bad = [p for p in ALL if "n3" in p] + [("n5", "n6")]
    result = attribute(NODES, ALL, bad, retest=lambda node, helper: node != "n3")
    assert {n: r.verdict for n, r in result.items() if r.verdict != "ok"} == {
        "n3": "node fault",
        "n5": "link fault",
        "n6": "link fault",
    }


def test_retest_turns_a_suspect_link_into_a_node_fault() -> None:
    # A ring gives each node two peers: one bad pair cannot tell node from link until the retest.
    ring = [(NODES[i], NODES[(i + 1) % 8]) for i in range(8)]
    result = attribute(NODES, ring, [("n1", "n2")], retest=lambda node, helper: node != "n2")
    assert result["n2"].verdict == "node fault"
    assert result["n1"].verdict == "ok"


def test_without_retest_a_lone_bad_pair_stays_a_link_fault() -> None:
    result = attribute(NODES, ALL, [("n0", "n1")], retest=None)
    assert result["n0"].verdict == result["n1"].verdict == "link fault"


def test_a_healthy_cluster_blames_no_one() -> None:
    result = attribute(NODES, ALL, [])
    assert all(r.verdict == "ok" for r in result.values())


def test_verdicts_of_several_checks_merge_worst_first() -> None:
    from pytest_fabric.attribution import merge

    rdma = attribute(NODES, ALL, [p for p in ALL if "n3" in p], what="rdma bandwidth")
    tcp = attribute(NODES, ALL, [p for p in ALL if "n7" in p], what="tcp throughput")
    merged = merge({"rdma_bandwidth": rdma, "tcp_throughput": tcp})
    assert merged["n3"].verdict == merged["n7"].verdict == "node fault"
    assert merged["n7"].message.startswith("tcp_throughput: n7 is bad with 7 of 7 peers")
    assert merged["n0"].verdict == "ok"
