"""Attribution: the right node, link or fabric is blamed, and nothing else is."""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field

from pytest_fabric.judge.attribution import Remeasure, attribute, merge
from pytest_fabric.run.pairs import make_pairs

NODES = [f"n{i}" for i in range(8)]
ALL = list(itertools.combinations(NODES, 2))


@dataclass
class Fabric:
    """A model fabric: which (sender, receiver) pairs are good alone and inside their round."""

    bad_links: set[frozenset[str]] = field(default_factory=set)
    receive_bad: set[str] = field(default_factory=set)
    send_bad: set[str] = field(default_factory=set)
    under_load: set[frozenset[str]] = field(default_factory=set)  # bad in a round, good alone
    transient: set[frozenset[str]] = field(default_factory=set)  # bad the first time only
    calls: list[tuple[str, str, str]] = field(default_factory=list)

    def good_alone(self, sender: str, receiver: str) -> bool:
        return (
            frozenset((sender, receiver)) not in self.bad_links
            and receiver not in self.receive_bad
            and sender not in self.send_bad
        )

    def sweep(self, pairs: list[tuple[str, str]]) -> list[tuple[str, str]]:
        """The pairs that fall short in the first sweep."""
        return [
            p for p in pairs
            if not self.good_alone(*p) or frozenset(p) in self.under_load or frozenset(p) in self.transient
        ]

    def remeasure(self) -> Remeasure:
        def alone(sender: str, receiver: str) -> bool:
            self.calls.append(("alone", sender, receiver))
            return self.good_alone(sender, receiver)

        def in_round(sender: str, receiver: str) -> bool:
            self.calls.append(("round", sender, receiver))
            return self.good_alone(sender, receiver) and frozenset((sender, receiver)) not in self.under_load

        return Remeasure.each(alone, in_round)


def sweep_pairs(nodes: list[str]) -> list[tuple[str, str]]:
    return [(p.a, p.b) for p in make_pairs(nodes, "all")]


def classes(result) -> dict[str, str]:  # type: ignore[no-untyped-def]
    return {n: r.verdict for n, r in result.nodes.items() if r.verdict != "ok"}


def test_a_node_bad_with_every_peer_is_a_node_fault() -> None:
    fabric = Fabric(send_bad={"n3"}, receive_bad={"n3"})
    pairs = sweep_pairs(NODES)
    result = attribute(NODES, pairs, fabric.sweep(pairs), remeasure=fabric.remeasure())
    assert classes(result) == {"n3": "node fault"}
    assert result["n3"].direction == "both"
    assert "Send n3 to the provider" in result["n3"].message
    assert result.fabric.verdict == "ok"


def test_a_single_bad_pair_is_a_link_fault_of_both_ends() -> None:
    fabric = Fabric(bad_links={frozenset(("n5", "n6"))})
    result = attribute(NODES, ALL, fabric.sweep(ALL), remeasure=fabric.remeasure())
    assert classes(result) == {"n5": "link fault", "n6": "link fault"}
    assert "between n5 and n6" in result["n5"].message
    assert any("good alone" in t for t in result["n5"].retests)
    assert ("alone", "n5", "n6") in fabric.calls  # re-measured alone before any verdict


def test_a_node_fault_and_a_link_fault_together() -> None:
    fabric = Fabric(send_bad={"n3"}, receive_bad={"n3"}, bad_links={frozenset(("n5", "n6"))})
    result = attribute(NODES, ALL, fabric.sweep(ALL), remeasure=fabric.remeasure())
    assert classes(result) == {"n3": "node fault", "n5": "link fault", "n6": "link fault"}


def test_retest_turns_a_suspect_link_into_a_node_fault() -> None:
    # A ring gives each node two peers: one bad pair cannot tell node from link until the retest.
    ring = [(NODES[i], NODES[(i + 1) % 8]) for i in range(8)]
    fabric = Fabric(receive_bad={"n2"})
    result = attribute(NODES, ring, fabric.sweep(ring), remeasure=fabric.remeasure())
    assert classes(result) == {"n2": "node fault"}
    assert result["n2"].direction == "receive"
    assert "when it receives" in result["n2"].message


def test_without_retest_a_lone_bad_pair_stays_a_link_fault() -> None:
    result = attribute(NODES, ALL, [("n0", "n1")], remeasure=None)
    assert result["n0"].verdict == result["n1"].verdict == "link fault"


def test_a_healthy_cluster_blames_no_one() -> None:
    result = attribute(NODES, ALL, [])
    assert classes(result) == {}
    assert result.fabric.verdict == "ok"


def test_only_measured_pairs_count_and_an_unreachable_node_is_unreachable() -> None:
    # n7's sshd is stopped: none of its pairs was measured. Its errored pairs are not bad pairs,
    # n7 is not a node fault, and no peer is "bad with n7".
    measured = [p for p in ALL if "n7" not in p]
    result = attribute(
        NODES,
        measured,
        [],
        unreachable={"n7": "ssh: connection refused"},
        errored={n: ["n7 unreachable"] for n in NODES if n != "n7"},
        remeasure=Fabric().remeasure(),
    )
    assert classes(result) == {"n7": "unreachable"}
    assert "not a node fault" in result["n7"].message and "connection refused" in result["n7"].message
    assert result["n0"].peers == 6
    assert "1 pair(s) with n0 errored and are not counted" in result["n0"].message


def test_nothing_measured_is_not_a_node_fault() -> None:
    # A profile that needs ibstat on nodes without it: every pair errored.
    result = attribute(NODES, [], [], errored={n: ["ibstat: command not found"] for n in NODES})
    assert {r.verdict for r in result.nodes.values()} == {"not measured"}
    assert "ibstat: command not found" in result["n0"].message


def test_every_pair_short_alone_is_one_fabric_wide_finding() -> None:
    nodes = NODES[:6]
    pairs = sweep_pairs(nodes)
    fabric = Fabric(bad_links={frozenset(p) for p in pairs})  # all 15 pairs at 11 Gb/s against 90
    result = attribute(nodes, pairs, fabric.sweep(pairs), remeasure=fabric.remeasure())
    assert classes(result) == {}
    assert result.fabric.verdict == "fabric-wide shortfall"
    assert "15 of 15 measured pairs" in result.fabric.message and "not 6 node faults" in result.fabric.message
    assert len([c for c in fabric.calls if c[0] == "alone"]) == 3  # a sample, not the whole cluster again
    assert "fabric-wide shortfall of the whole fabric" in result["n0"].message


def test_every_pair_short_only_in_rounds_is_the_fabric_failing_under_load() -> None:
    nodes = NODES[:6]
    pairs = sweep_pairs(nodes)
    fabric = Fabric(under_load={frozenset(p) for p in pairs})
    result = attribute(nodes, pairs, fabric.sweep(pairs), remeasure=fabric.remeasure())
    assert classes(result) == {}
    assert result.fabric.verdict == "fails under load"


def test_a_pair_short_only_inside_its_round_fails_under_load() -> None:
    fabric = Fabric(under_load={frozenset(("n1", "n6")), frozenset(("n2", "n5"))})
    pairs = sweep_pairs(NODES)
    result = attribute(NODES, pairs, fabric.sweep(pairs), remeasure=fabric.remeasure())
    assert classes(result) == {}  # not a node, not a cable
    assert result.fabric.verdict == "fails under load"
    assert len(result.fabric.under_load) == 2
    assert "fails under load" in result["n1"].message


def test_a_transient_pair_fault_gone_on_re_measure_is_not_reproduced() -> None:
    fabric = Fabric(transient={frozenset(("n1", "n6"))})
    pairs = sweep_pairs(NODES)
    result = attribute(NODES, pairs, fabric.sweep(pairs), remeasure=fabric.remeasure())
    assert classes(result) == {}
    assert result.fabric.verdict == "ok"
    assert result.fabric.not_reproduced and "not reproduced" in result["n1"].message


def test_a_receive_only_node_fault_is_found_in_its_receive_direction() -> None:
    # n0 is the circle method's fixed node: it must receive in some rounds for this to show.
    fabric = Fabric(receive_bad={"n0"})
    pairs = sweep_pairs(NODES)
    assert fabric.sweep(pairs), "n0 never receives in the sweep"
    result = attribute(NODES, pairs, fabric.sweep(pairs), remeasure=fabric.remeasure())
    assert classes(result) == {"n0": "node fault"}
    assert result["n0"].direction == "receive"


def test_node_faults_are_retested_with_several_helpers_not_always_the_first() -> None:
    fabric = Fabric(send_bad={"n2", "n5"}, receive_bad={"n2", "n5"})
    pairs = sweep_pairs(NODES)
    result = attribute(NODES, pairs, fabric.sweep(pairs), remeasure=fabric.remeasure())
    assert classes(result) == {"n2": "node fault", "n5": "node fault"}

    def helpers(node: str) -> set[str]:
        return {s if r == node else r for kind, s, r in fabric.calls if node in (s, r)} - {node}

    def directions(node: str) -> set[str]:
        return {"send" if s == node else "receive" for kind, s, r in fabric.calls if node in (s, r)}

    assert len(helpers("n2")) >= 2 and len(helpers("n5")) >= 2
    assert helpers("n2") != helpers("n5")
    assert directions("n2") == directions("n5") == {"send", "receive"}


def test_with_no_known_good_node_it_cannot_attribute() -> None:
    ring = [("n0", "n1"), ("n1", "n2"), ("n2", "n3"), ("n3", "n0")]
    fabric = Fabric(bad_links={frozenset(("n0", "n1")), frozenset(("n2", "n3"))})
    nodes = NODES[:4]
    result = attribute(nodes, ring, fabric.sweep(ring), remeasure=fabric.remeasure())
    assert set(classes(result).values()) == {"cannot attribute"}
    assert "cannot attribute: no node is good with its peers" in result["n0"].message
    assert result.fabric.verdict == "cannot attribute"


def test_sixteen_nodes_receive_fault_cable_and_collision_each_in_its_class() -> None:
    nodes = [f"n{i:02d}" for i in range(16)]
    pairs = sweep_pairs(nodes)
    collided = [frozenset(p) for p in pairs if "n00" not in p and "n03" not in p and "n07" not in p][:2]
    fabric = Fabric(receive_bad={"n03"}, bad_links={frozenset(("n07", "n11"))}, under_load=set(collided))
    result = attribute(nodes, pairs, fabric.sweep(pairs), remeasure=fabric.remeasure())
    assert classes(result) == {"n03": "node fault", "n07": "link fault", "n11": "link fault"}
    assert result["n03"].direction == "receive"
    assert result.fabric.verdict == "fails under load"
    assert sorted(result.fabric.under_load) == sorted(
        next(f"{a}<->{b}" for a, b in pairs if frozenset((a, b)) == c) for c in collided
    )


def test_verdicts_of_several_checks_merge_worst_first() -> None:
    rdma = attribute(NODES, ALL, [p for p in ALL if "n3" in p], what="rdma bandwidth")
    tcp = attribute(NODES, ALL, [p for p in ALL if "n7" in p], what="tcp throughput")
    merged = merge({"rdma_bandwidth": rdma, "tcp_throughput": tcp})
    assert merged["n3"].verdict == merged["n7"].verdict == "node fault"
    assert merged["n7"].message.startswith("tcp_throughput: n7 is tcp throughput-bad with 7 of 7 measured peers")
    assert merged["n0"].verdict == "ok"
    assert merged.fabric.verdict == "ok"


def test_a_retest_whose_repeats_straddle_the_floor_is_cannot_attribute_not_a_link_fault() -> None:
    # hdr200 on six identical nodes: three "link faults" came from one-sample retests near the floor.
    from pytest_fabric.judge.attribution import Remeasure, Retest

    bad_pair = ("n5", "n6")

    def alone(a: str, b: str) -> Retest:
        if {a, b} == set(bad_pair):
            return Retest(None, "24.1 Gb/s, 25.2 Gb/s, 25.3 Gb/s, median 25.2 Gb/s")
        return Retest(True, "28.7 Gb/s, 28.8 Gb/s, 28.9 Gb/s, median 28.8 Gb/s")

    result = attribute(NODES, ALL, [bad_pair], remeasure=Remeasure.each(alone))
    assert result["n5"].verdict == "cannot attribute" and result["n6"].verdict == "cannot attribute"
    assert "link fault" not in {r.verdict for r in result.nodes.values()}
    assert any("n5->n6 cannot tell alone: 24.1 Gb/s, 25.2 Gb/s" in t for t in result["n5"].retests), result["n5"].retests
    assert result.fabric.verdict == "cannot attribute" and "n5<->n6" in result.fabric.message

