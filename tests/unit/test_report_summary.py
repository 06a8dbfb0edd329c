"""Counts, worst checks, nodes to send back and display strings of the conformance report.

The run's verdict has its own tests: test_report_run_verdict.py.
"""

from __future__ import annotations

from pytest_fabric.report.summary import (
    attributions,
    blame_findings,
    cannot_tell,
    format_expected,
    format_margin,
    format_quantity,
    node_rows,
    nodeset,
    not_measured,
    outcome_counts,
    send_back,
    tool_versions,
    worst_per_layer,
)
from pytest_fabric.report.testing import make_check, sample_cluster


def test_waived_is_counted_as_waived() -> None:
    checks = [make_check("port_rate", "a:mlx5_0/1", "waived", waiver="ticket 1"), make_check("gpu_count", "a", "passed")]
    assert outcome_counts(checks)["waived"] == 1


def test_empty_run_counts_every_outcome_as_zero() -> None:
    assert outcome_counts([]) == {"passed": 0, "failed": 0, "error": 0, "waived": 0, "skipped": 0}


def test_worst_per_layer_largest_shortfall_first_then_errors() -> None:
    checks = [
        make_check("tcp_throughput", "a<->b", "failed", value=170, unit="Gb/s", expected=180),
        make_check("tcp_throughput", "a<->c", "error", message="c unreachable"),
        make_check("tcp_throughput", "b<->c", "failed", value=90, unit="Gb/s", expected=180),
        make_check("gpu_count", "a", "failed", value=7, expected=8, layer="intra_node"),
        make_check("tcp_throughput", "b<->d", "passed", value=190, unit="Gb/s", expected=180),
    ]
    worst = worst_per_layer(checks)
    assert list(worst) == ["intra_node", "inter_node"]
    assert [c["subject"] for c in worst["inter_node"]] == ["b<->c", "a<->b", "a<->c"]
    assert len(worst_per_layer(checks, limit=1)["inter_node"]) == 1


def test_node_rows_count_problems_and_carry_attribution() -> None:
    info, checks = sample_cluster(4)
    rows = {r.node: r for r in node_rows(checks, info.nodes, info.node_labels)}
    assert len(rows["node04"].errored) == 4 and not rows["node04"].ok
    assert len(rows["node03"].failed) == 2
    assert rows["node03"].attribution and rows["node03"].attribution["verdict"] == "node fault"
    assert rows["node01"].labels == {"leaf": "leaf1"}
    assert attributions(checks)["node03"]["bad_peers"] == ["node01", "node02"]


def test_tool_versions_aggregate_and_show_disagreement() -> None:
    checks = [
        make_check("tcp_throughput", "a<->b", "passed", extra={"tool_versions": {"iperf3": "3.12"}}),
        make_check("tcp_throughput", "a<->c", "passed", extra={"tool_versions": {"iperf3": "3.9", "x": None}}),
    ]
    assert tool_versions(checks) == {"iperf3": ["3.12", "3.9"]}


def test_display_strings() -> None:
    assert format_quantity({"value": 191.23, "unit": "Gb/s"}) == "191.2 Gb/s"
    assert format_quantity({"value": 8, "unit": None}) == "8"
    assert format_quantity(None) == ""
    assert format_margin(-0.124) == "-12.4%"
    assert format_margin(None) == ""
    assert format_expected({"op": ">=", "value": 180, "unit": "Gb/s", "as_written": "90% line"}) == ">= 180 Gb/s (90% line)"
    assert format_expected({"op": "<=", "value": 2.5, "unit": "us", "as_written": "2.5 us"}) == "<= 2.5 us"


def test_nodeset_folds_as_slurm_writes_it() -> None:
    assert nodeset(["gpu17", "gpu03", "gpu04", "gpu03"]) == "gpu[03-04,17]"
    assert nodeset([]) == ""
    # A name no nodeset can hold is listed as it is, never folded into other names.
    assert nodeset(["<script>", "a[1]"]) == "<script>,a[1]"


def test_send_back_a_slow_node_not_its_peers() -> None:
    # node03 fails every pair it is in; node01, node02 and node04 fail one pair each: they are fine.
    _, checks = sample_cluster(5, slow="node03", down=None)
    assert send_back(checks) == ["node03"]


def test_send_back_a_failed_single_node_check_and_list_a_down_node_apart() -> None:
    # issue 29: a node that could not be measured is never sent back; it is listed apart, with why
    _, checks = sample_cluster(4, slow=None, down="node04")
    checks.append(make_check("gpu_count", "node02", "failed", value=7, expected=8, nodes=["node02"]))
    assert send_back(checks) == ["node02"]
    assert nodeset(send_back(checks)) == "node02"
    assert list(not_measured(checks)) == ["node04"]


def test_send_back_follows_attribution() -> None:
    pair = [make_check("tcp_throughput", "a1<->a2", "failed", nodes=["a1", "a2"])]
    # Two nodes, one bad pair: nothing is evidence against either end; it cannot be told.
    assert send_back(pair) == [] and cannot_tell(pair) == ["a1<->a2"]
    cleared = make_check("attribution", "cluster", "passed", nodes=[],
                         extra={"attribution": [{"node": "a1", "verdict": "ok"}, {"node": "a2", "verdict": "node fault"}]})
    assert send_back([*pair, cleared]) == ["a2"]


def test_send_back_nothing_for_waived_skipped_or_cluster_checks() -> None:
    checks = [make_check("port_rate", "a:mlx5_0/1", "waived", nodes=["a"], waiver="ticket"),
              make_check("download", "a:m", "skipped", nodes=["a"]),
              make_check("tcp_throughput", "cluster", "failed", nodes=["a", "b", "c"])]
    assert send_back(checks) == []


def _pairs_of(node: str, peers: list[str], bad: bool = True) -> list[dict[str, object]]:
    return [make_check("tcp_throughput", f"{node}<->{p}", "failed" if bad else "passed", nodes=[node, p])
            for p in peers]


def _sweep(slow: str, nodes: list[str]) -> list[dict[str, object]]:
    """Every pair of ``nodes`` with its figure: ``slow``'s pairs at 1 Gb/s, the others 9 to 9.4."""
    out = []
    for i, a in enumerate(nodes):
        for j, b in enumerate(nodes[i + 1:]):
            bad = slow in (a, b)
            out.append(make_check("tcp_throughput", f"{a}<->{b}", "failed" if bad else "passed", nodes=[a, b],
                                  value=1.0 if bad else 9.0 + 0.1 * ((i + j) % 5), unit="Gb/s", expected=5))
    return out


def test_failed_pairs_alone_send_back_no_one_attribution_decides() -> None:
    # -k node03 (or --lf) runs only node03's pairs: the one model (judge/blame.py) has no baseline
    # without node03, so no end is guessed: the pairs are listed as cannot tell.
    nodes = ["node01", "node02", "node03", "node04", "node05", "node06"]
    checks = [c for c in _sweep("node03", nodes) if "node03" in c["nodes"]]
    assert send_back(checks) == []
    assert len(cannot_tell(checks)) == 5
    # the whole sweep without the attribution check: the same model on the recorded figures
    assert send_back(_sweep("node03", nodes)) == ["node03"]
    judged = make_check("attribution", "node03", "failed", nodes=["node03"],
                        extra={"attribution": {"node": "node03", "verdict": "unstable"}})
    assert send_back([*checks, judged]) == ["node03"] and cannot_tell([*checks, judged]) == []


def test_blame_findings_that_send_no_node_back_are_read_apart() -> None:
    found = {"verdict": "cannot tell", "links": [{"series": "tcp_throughput", "nodes": ["a", "b"], "message": "a link fault"}],
             "fabric": [], "cannot_tell": [{"node": "c", "message": "short", "tell": "measure c with 3 more peers"}]}
    checks = [make_check("fabric_attribution", "cluster", "failed", nodes=[], extra={"fabric_attribution": found}),
              make_check("attribution", "a", "failed", nodes=["a"], extra={"attribution": {"node": "a", "verdict": "link fault"}})]
    assert send_back(checks) == []
    assert blame_findings(checks) == {"links": found["links"], "fabric": [], "cannot_tell": found["cannot_tell"]}
    assert blame_findings([]) == {"links": [], "fabric": [], "cannot_tell": []}


def test_one_failed_pair_per_node_with_one_peer_names_nobody() -> None:
    checks = _pairs_of("node03", ["node01"]) + _pairs_of("node05", ["node06"])
    assert send_back(checks) == []
    assert cannot_tell(checks) == ["node03<->node01", "node05<->node06"]


def test_peers_that_are_themselves_at_fault_are_no_evidence_against_a_node() -> None:
    # node02 failed its GPU count; its failed pairs with node01 and node03 say nothing of those two.
    checks = [make_check("gpu_count", "node02", "failed", nodes=["node02"]),
              *_pairs_of("node01", ["node02"]), *_pairs_of("node03", ["node02"])]
    assert send_back(checks) == ["node02"]


def test_an_error_a_peer_caused_is_that_peers() -> None:
    # node04 laid out the files node03 reads; node04's sshd stopped: node03's check errored by node04.
    checks = [make_check("sequential_read", "node03:/shared", "error", nodes=["node03"],
                         message="node node04: unreachable: connection refused", extra={"error_node": "node04"}),
              make_check("mtu", "node03", "passed", nodes=["node03"])]
    assert send_back(checks) == []
    assert list(not_measured(checks)) == ["node04"]  # node04's, not node03's: listed apart, not sent back
    assert "connection refused" in not_measured(checks)["node04"]
