"""Errors of one cause: the message with every node name taken out, wherever the names stand."""

from __future__ import annotations

from pytest_fabric.report.causes import cause_key, group_by_cause
from pytest_fabric.report.testing import make_check

NODES = [f"node{i:02d}" for i in range(1, 9)]


def _unattributed(node: str, pairs: list[tuple[str, str]]) -> dict[str, object]:
    # As attribution words it: each quoted pair as the round made it, with the error its first end met.
    quoted = "; ".join(f"{a}<->{b}: node {a}: ibstat: command not found" for a, b in pairs)
    return make_check("attribution", node, "error", nodes=[node],
                      message=f"node {node}: rdma_bandwidth: no pair with {node} was measured ({quoted}), so there "
                              f"is nothing to attribute\nfix: make every pair with {node} measurable and run again")


def test_attributions_quoting_their_pairs_in_either_order_are_one_cause() -> None:
    # node01 is the first end of both its pairs, node02 the second of one, node05 of both, node07 of the other.
    errors = [_unattributed("node01", [("node01", "node03"), ("node01", "node04")]),
              _unattributed("node02", [("node06", "node02"), ("node02", "node08")]),
              _unattributed("node05", [("node03", "node05"), ("node04", "node05")]),
              _unattributed("node07", [("node07", "node02"), ("node06", "node07")])]
    (cause,) = group_by_cause(errors, NODES)
    assert len(cause.checks) == 4 and cause.where() == "on node[01-02,05,07] (4 checks)"
    assert cause.message().startswith("node node[01-02,05,07]: rdma_bandwidth: no pair with node[01-02,05,07]")
    assert cause.message().endswith("fix: make every pair with node[01-02,05,07] measurable and run again")


def test_the_key_takes_out_every_node_of_the_run() -> None:
    # A node with no error of its own is still a node name: the terminal keys errors as they come,
    # knowing every node of the run but not yet the other errors.
    one = _unattributed("node01", [("node01", "node03")])
    other = _unattributed("node02", [("node07", "node02")])
    assert cause_key(one, NODES) == cause_key(other, NODES)
    assert cause_key(one) != cause_key(other)  # without the run's nodes, node03 and node07 are text


def test_different_causes_stay_apart() -> None:
    missing = make_check("port_rate", "node01", "error", nodes=["node01"], message="node node01: ibstat: command not found")
    refused = make_check("port_rate", "node02", "error", nodes=["node02"], message="node node02: connection refused")
    assert len(group_by_cause([missing, refused], NODES)) == 2


def test_grouping_does_not_search_the_message_once_per_node() -> None:
    # Every name of a 4,096-node run is a name to take out: a search per name and message was
    # quadratic (512 errors on 512 nodes took 1.1 s; these would take minutes).
    import time

    nodes = [f"gpu{i:04d}" for i in range(1, 4097)]
    errors = [make_check(check, n, "error", nodes=[n], message=f"node {n}: ibstat: command not found\n"
                         f"command: ibstat\nfix: install infiniband-diags on {n}")
              for check in ("link_layer", "port_rate") for n in nodes]
    started = time.perf_counter()
    (cause,) = group_by_cause(errors, nodes)
    assert time.perf_counter() - started < 5  # ~0.2 s here
    assert cause.message() == ("node gpu[0001-4096]: ibstat: command not found\ncommand: ibstat\n"
                               "fix: install infiniband-diags on gpu[0001-4096]")


def test_a_name_is_a_whole_word_and_the_longest_one_wins() -> None:
    names = {"node01", "node01.ib", "node1"}
    c = make_check("mtu", "node01", "error", nodes=["node01"],
                   message="node01: no route to node01.ib from node010, node01-bmc or xnode01; node1 is fine")
    assert cause_key(c, names) == cause_key(dict(c, message=c["message"].replace("node1 ", "node01 ")), names)
    key = cause_key(c, names)
    assert "node010" in key and "node01-bmc" in key and "xnode01" in key and "node01.ib" not in key
