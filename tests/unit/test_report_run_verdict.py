"""The run's verdict (DESIGN.md, "Verdicts"): ACCEPT only when every check the profile sets ran on every
subject and passed; REJECT on a failure; INCOMPLETE when checks were deselected or errored; INTERRUPTED
when the run stopped; no verdict when nothing was measured."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from pytest_fabric.record.check_record import PlannedCheck
from pytest_fabric.report.run_verdict import Plan, judge_run
from pytest_fabric.report.testing import make_check


def _planned(c: dict[str, Any], *, sets: bool = True, key: str | None = None) -> PlannedCheck:
    return PlannedCheck(c["nodeid"], c["layer"], c["check"], c["subject"], key or f"{c['layer']}.{c['check']}", sets)


def _plan(selected: list[dict[str, Any]], deselected: list[dict[str, Any]] = (),  # type: ignore[assignment]
          profile_checks: tuple[str, ...] = ()) -> Plan:
    return Plan({c["nodeid"]: _planned(c) for c in selected}, {c["nodeid"]: _planned(c) for c in deselected},
                profile_checks)


def _mtu(node: str, outcome: str = "passed") -> dict[str, Any]:
    return make_check("mtu", node, outcome, value=1500, expected=1500, op="==", nodes=[node])


def _tcp(pair: str, outcome: str = "passed") -> dict[str, Any]:
    return make_check("tcp_throughput", pair, outcome, value=9.0, unit="Gb/s", expected=1.5)


def test_accept_when_every_planned_check_ran_and_passed() -> None:
    checks = [_mtu("a"), _mtu("b"), _tcp("a<->b")]
    v = judge_run(checks, _plan(checks))
    assert (v.verdict, v.status, v.word, v.not_run) == ("accept", "complete", "ACCEPT", {})


def test_a_waived_check_counts_as_passed() -> None:
    checks = [_mtu("a"), make_check("port_rate", "a:mlx5_0/1", "waived", value=100, expected=200, waiver="ticket 1")]
    assert judge_run(checks, _plan(checks)).verdict == "accept"


def test_deselected_checks_make_the_run_incomplete_with_counts_per_check() -> None:
    # The reproduction of issue 10: -k mtu ran 1 check of many and said accept.
    ran = [_mtu("a"), _mtu("b")]
    left_out = [_tcp("a<->b"), _tcp("a<->c"), make_check("sequential_read", "a:/data", "passed")]
    v = judge_run(ran, _plan(ran, left_out))
    assert v.verdict == "incomplete" and v.word == "INCOMPLETE"
    assert v.not_run == {"deselected": {"inter_node.tcp_throughput": 2, "storage.sequential_read": 1}}
    assert v.not_run_count() == 3
    assert v.to_json()["not_run"] == {"deselected": {"inter_node.tcp_throughput": 2, "storage.sequential_read": 1}}


def test_deselecting_a_check_the_profile_does_not_set_changes_nothing() -> None:
    ran = [_mtu("a")]
    unset = _tcp("a<->b")
    plan = Plan({ran[0]["nodeid"]: _planned(ran[0])}, {unset["nodeid"]: _planned(unset, sets=False)})
    assert judge_run(ran, plan).verdict == "accept"


def test_an_error_without_a_failure_is_incomplete_never_accept_nor_reject() -> None:
    checks = [_mtu("a"), _mtu("b", "error")]
    v = judge_run(checks, _plan(checks))
    assert v.verdict == "incomplete" and v.not_run == {"errored": {"inter_node.mtu": 1}}
    # Without a plan (records from elsewhere) the same.
    assert judge_run(checks).verdict == "incomplete"


def test_a_failure_rejects_whatever_else_did_not_run() -> None:
    checks = [_mtu("a", "failed"), _mtu("b", "error")]
    v = judge_run(checks, _plan(checks, [_tcp("a<->b")]))
    assert v.verdict == "reject"
    assert v.not_run == {"errored": {"inter_node.mtu": 1}, "deselected": {"inter_node.tcp_throughput": 1}}


@pytest.mark.parametrize("outcome", ["passed", "failed", "error"])
def test_an_interrupted_run_is_interrupted(outcome: str) -> None:
    ran = [_mtu("a", outcome)]
    never = [_tcp("a<->b"), _tcp("a<->c")]
    v = judge_run(ran, _plan(ran + never), status="interrupted")
    assert (v.verdict, v.status, v.word) == ("interrupted", "interrupted", "INTERRUPTED")
    assert v.not_run["unreported"] == {"inter_node.tcp_throughput": 2}


def test_interrupted_before_anything_was_measured() -> None:
    # Ctrl-C four seconds in printed ACCEPT with 75 skipped: it is interrupted.
    skipped = [make_check("download", "a:m", "skipped", message="profile sets no egress.download")]
    plan = Plan({skipped[0]["nodeid"]: _planned(skipped[0], sets=False)})
    assert judge_run(skipped, plan, status="interrupted").verdict == "interrupted"


def test_nothing_measured_has_no_verdict() -> None:
    assert judge_run([]).verdict is None
    assert judge_run([]).word == "NO VERDICT" and judge_run([]).css == "none"
    skipped = [make_check("download", "a:m", "skipped")]
    errored = [_mtu("a", "error"), _mtu("b", "error")]
    assert judge_run(skipped).verdict is None
    assert judge_run(errored, _plan(errored)).verdict is None


def test_still_running_has_no_verdict_yet() -> None:
    checks = [_mtu("a", "failed")]
    v = judge_run(checks, status="running")
    assert (v.verdict, v.status) == (None, "running")


def test_a_set_check_that_measured_nothing_blocks_accept() -> None:
    # The profile sets the check, but nothing was measured (one rail: no aggregation; no dcgmi;
    # no leaf labels): the provider writes the inventory and installs the nodes, so it is no pass.
    ran = [_mtu("a")]
    skip = make_check("aggregate_rdma_bandwidth", "a<->b", "skipped", expected=300,
                      message="a<->b has 1 rail(s); aggregation needs at least 2")
    v = judge_run([*ran, skip], _plan([*ran, skip]))
    assert v.verdict == "incomplete"
    assert v.not_run == {"skipped": {"inter_node.aggregate_rdma_bandwidth": 1}}
    assert v.skip_reasons == {"inter_node.aggregate_rdma_bandwidth": "a<->b has 1 rail(s); aggregation needs at least 2"}


def test_a_skip_of_a_check_marked_optional_is_listed_but_does_not_block_accept() -> None:
    ran = [_mtu("a")]
    skip = make_check("gpu_health", "a", "skipped", layer="intra_node", expected=1,
                      message="dcgmi is not installed on a")
    plan = Plan({c["nodeid"]: dataclasses.replace(_planned(c), optional=c is skip) for c in [*ran, skip]})
    v = judge_run([*ran, skip], plan)
    assert v.verdict == "accept"
    assert v.not_run == {"optional": {"intra_node.gpu_health": 1}}


def test_a_skip_of_a_check_the_profile_does_not_set_is_not_listed() -> None:
    ran = [_mtu("a")]
    skip = make_check("download", "a:m", "skipped", message="profile sim does not set egress.download")
    plan = Plan({c["nodeid"]: _planned(c, sets=c is not skip) for c in [*ran, skip]})
    v = judge_run([*ran, skip], plan)
    assert v.verdict == "accept" and v.not_run == {}


def test_a_selected_check_that_never_reported_is_not_run() -> None:
    # A worker that died, or a run that stopped: the test was selected but no record came back.
    ran = [_mtu("a")]
    lost = _mtu("b")
    v = judge_run(ran, _plan([*ran, lost]))
    assert v.verdict == "incomplete" and v.not_run == {"unreported": {"inter_node.mtu": 1}}


def test_a_check_the_profile_sets_that_was_never_collected() -> None:
    # `pytest --cluster ... conformance/inter_node/test_mtu.py`: the profile's tcp_throughput has no test.
    ran = [_mtu("a")]
    v = judge_run(ran, _plan(ran, profile_checks=("inter_node.mtu", "inter_node.tcp_throughput")))
    assert v.verdict == "incomplete" and v.not_run == {"not collected": {"inter_node.tcp_throughput": 1}}
    # the verdict line's "N not run" counts it (it said "INCOMPLETE: 0 failed, 0 errored (...)")
    assert v.not_run_count() == 1
    # A check judged by a profile key of another name is collected under that key.
    outlier = make_check("tcp_throughput_outlier", "a<->b", "passed")
    plan = Plan({c["nodeid"]: _planned(c, key="inter_node.outlier" if c is outlier else None) for c in [*ran, outlier]},
                {}, ("inter_node.mtu", "inter_node.outlier"))
    assert judge_run([*ran, outlier], plan).verdict == "accept"


def test_plan_travels_as_json_and_merges() -> None:
    a, b = _mtu("a"), _mtu("b")
    one = Plan({a["nodeid"]: _planned(a)}, {b["nodeid"]: _planned(b)}, ("inter_node.mtu",))
    assert Plan.from_dict(one.to_dict()) == one
    other = Plan({b["nodeid"]: _planned(b)}, {}, ("inter_node.mtu",))
    merged = one.merged(other)
    assert set(merged.selected) == {a["nodeid"], b["nodeid"]} and not merged.deselected
    assert merged.profile_checks == ("inter_node.mtu",)
