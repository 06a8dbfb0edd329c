"""Verdict, counts, worst checks and display strings of the conformance report."""

from __future__ import annotations

from pytest_fabric.report.summary import (
    attributions,
    format_expected,
    format_margin,
    format_quantity,
    node_rows,
    outcome_counts,
    run_verdict,
    tool_versions,
    worst_per_layer,
)
from pytest_fabric.report.testing import make_check, sample_cluster


def test_accept_when_nothing_failed_or_errored() -> None:
    checks = [make_check("tcp_throughput", "a<->b", "passed"), make_check("download", "a:m", "skipped")]
    assert run_verdict(checks) == "accept"


def test_waived_does_not_reject() -> None:
    checks = [make_check("port_rate", "a:mlx5_0/1", "waived", waiver="ticket 1"), make_check("gpu_count", "a", "passed")]
    assert run_verdict(checks) == "accept"
    assert outcome_counts(checks)["waived"] == 1


def test_failed_or_error_rejects() -> None:
    assert run_verdict([make_check("gpu_count", "a", "failed")]) == "reject"
    assert run_verdict([make_check("gpu_count", "a", "error")]) == "reject"


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
