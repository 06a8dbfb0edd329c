"""The terminal summary's lines: the verdict line, what did not run, errors folded by cause, nodes to send back."""

from __future__ import annotations

import pytest

from pytest_fabric.report.run_verdict import judge_run
from pytest_fabric.report.terminal import (
    blame_lines,
    error_groups,
    error_lines,
    not_measured_lines,
    not_run_lines,
    send_back_line,
    verdict_line,
)
from pytest_fabric.report.testing import make_check, sample_cluster


def test_a_down_node_is_one_line_with_its_peers_folded() -> None:
    _, checks = sample_cluster(8, slow=None, down="node06")
    tcp_errors = [c for c in checks if c["outcome"] == "error" and c["check"] == "tcp_throughput"]
    (group,) = error_groups(tcp_errors)
    assert error_lines(group)[0] == (
        "ERROR  tcp_throughput node06 with node[01-05,07-08] (7 pairs): "
        "node06 unreachable: ssh node06 iperf3 -s: connection refused"
    )


def test_errors_without_a_shared_node_name_the_nodes_as_a_nodeset() -> None:
    group = [make_check("mtu", f"gpu{i:02d}", "error", nodes=[f"gpu{i:02d}"], message="ip: command not found")
             for i in (3, 4, 5, 17)]
    assert error_lines(group)[0] == "ERROR  mtu on gpu[03-05,17] (4 checks): ip: command not found"


def test_one_missing_tool_on_every_node_is_one_group_across_checks() -> None:
    def missing(check: str, node: str) -> dict[str, object]:
        return make_check(check, node, "error", nodes=[node], message=f"node {node}: ibstat: command not found\n"
                          f"command: ibstat\nfix: install infiniband-diags on {node}")
    errors = [missing(check, f"gpu{i:02d}") for check in ("link_layer", "port_rate") for i in range(1, 65)]
    (group,) = error_groups(errors)
    assert error_lines(group) == [
        "ERROR  link_layer, port_rate on gpu[01-64] (128 checks): node gpu[01-64]: ibstat: command not found",
        "command: ibstat",
        "fix: install infiniband-diags on gpu[01-64]",
    ]


def test_verdict_line_says_what_did_not_run_and_when_nothing_was_measured() -> None:
    _, checks = sample_cluster(3, slow=None, down=None)
    assert verdict_line(judge_run(checks), 3).startswith("ACCEPT: 0 failed, 0 errored (")
    errored = [make_check("mtu", "a", "error", nodes=["a"])]
    assert verdict_line(judge_run(errored), 1) == "NO VERDICT: 0 failed, 1 errored, nothing measured (1 checks on 1 nodes)"
    assert verdict_line(judge_run(checks, status="interrupted"), 3).startswith("INTERRUPTED: 0 failed, 0 errored (")


def test_not_run_lines_give_counts_per_check_and_the_skip_reason() -> None:
    ran = make_check("mtu", "a", "passed", expected=1500, nodes=["a"])
    skip = make_check("aggregate_write", "cluster", "skipped", expected=10, layer="storage", nodes=[],
                      message="aggregate_write needs a shared mount")
    lines = not_run_lines(judge_run([ran, skip]))
    assert lines == ["not run (the verdict counts none of these):",
                     "  skipped: the profile sets it but nothing was measured: "
                     "storage.aggregate_write (1: aggregate_write needs a shared mount)"]
    assert not_run_lines(judge_run([ran])) == []


def test_send_back_line() -> None:
    _, checks = sample_cluster(4, slow="node03", down="node04")
    assert send_back_line(checks) == "nodes to send back: node03"  # node04 is down: not measured, apart
    assert send_back_line([]) == "nodes to send back: none"


def test_nodes_not_measured_are_a_list_of_their_own_with_why() -> None:
    _, checks = sample_cluster(4, slow="node03", down="node04")
    lines = not_measured_lines(checks)
    assert lines[0] == "nodes not measured (not sent back): node04"
    assert lines[1].startswith("  node04: ")
    assert not_measured_lines([]) == []


def test_a_message_quoting_other_nodes_is_still_one_cause() -> None:
    def unattributed(node: str, peer: str) -> dict[str, object]:
        return make_check("attribution", node, "error", nodes=[node],
                          message=f"node {node}: no pair with {node} was measured ({node}<->{peer}: ibstat missing)")
    # Each quotes a node that has errors of its own (the names the run's errors hold).
    (group,) = error_groups([unattributed("node01", "node02"), unattributed("node02", "node03"),
                             unattributed("node03", "node01")])
    assert error_lines(group) == [
        "ERROR  attribution on node[01-03] (3 checks): node node[01-03]: no pair with node[01-03] was measured "
        "(node[01-03]<->node[01-03]: ibstat missing)"
    ]


def test_a_failure_with_nothing_measured_says_what_was_found() -> None:
    from pytest_fabric.report.terminal import problem_line

    c = make_check("connect_latency", "node01:10.0.0.1:9", "failed", value="absent", expected=50, op="<=",
                   nodes=["node01"], message="node01:10.0.0.1:9: cannot connect to 10.0.0.1:9 from node01: connection refused")
    assert problem_line(c) == ("FAILED connect_latency node01:10.0.0.1:9: "
                               "cannot connect to 10.0.0.1:9 from node01: connection refused")


def test_a_cluster_wide_finding_comes_before_the_worst_pairs(pytester: pytest.Pytester) -> None:
    # hdr200 on six nodes: five worst pairs shown, and the fabric-wide shortfall that explains them hidden.
    from pytest_fabric.report.testing import sample_run_info, write_fake_project

    pairs = [make_check("rdma_bandwidth", f"n{i}<->n{i + 1}", "failed", value=170.0 + i, unit="Gb/s",
                        expected=180, nodes=[f"n{i}", f"n{i + 1}"]) for i in range(7)]
    fabric = make_check("fabric_attribution", "cluster", "failed", nodes=[],
                        message="fabric-wide shortfall: 7 of 7 measured pairs fall short, alone too")
    write_fake_project(pytester.path, sample_run_info([f"n{i}" for i in range(8)]), [*pairs, fabric])
    out = pytester.runpytest().stdout.str()
    first_pair = out.index("FAILED rdma_bandwidth")
    assert out.index("cluster-wide findings") < out.index("FAILED fabric_attribution: fabric-wide shortfall") < first_pair


def test_attributions_findings_that_send_no_node_back_are_each_said_apart() -> None:
    found = {"verdict": "cannot tell", "under_load": ["n2<->n5"],
             "links": [{"series": "rdma_bandwidth mlx5_0", "nodes": ["n1", "n4"], "message": "a link fault: 90 against 196"}],
             "fabric": [], "cannot_tell": [{"node": "n7", "message": "short", "tell": "measure n7 with at least 3 more peers"}]}
    checks = [make_check("fabric_attribution", "cluster", "failed", nodes=[], extra={"fabric_attribution": found})]
    assert blame_lines(checks) == [
        "link faults (the cable or switch path between two good nodes; no node sent back):",
        "  n1<->n4 (rdma_bandwidth mlx5_0): a link fault: 90 against 196",
        "fabric findings (short with no node pattern; no node sent back):",
        "  fails under load (short inside their round, good alone, short in it again): n2<->n5",
        "cannot tell node from link (not sent back):",
        "  n7: measure n7 with at least 3 more peers",
    ]
    assert send_back_line(checks) == "nodes to send back: none" and blame_lines([]) == []
