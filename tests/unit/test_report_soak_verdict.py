"""run_verdict.with_soak: a soak's judgement over time joined with the run's verdict (issue 31)."""

from __future__ import annotations

import pytest

from pytest_fabric.report.run_verdict import RunVerdict, with_soak


def _run(verdict: str | None, status: str = "complete") -> RunVerdict:
    return RunVerdict(verdict, status, {"passed": 2}, {})


@pytest.mark.parametrize(("run", "status", "soak", "expected"), [
    ("accept", "complete", "accept", "accept"),
    ("accept", "complete", "reject", "reject"),  # a fault in cycle 3; the last cycle passed
    ("interrupted", "interrupted", "reject", "reject"),  # a fault found is a fault, interrupted or not
    ("interrupted", "interrupted", "accept", "interrupted"),  # what ran was fine, but it did not run its length
    ("accept", "complete", "incomplete", "incomplete"),  # a cycle that could not measure
    ("reject", "complete", "incomplete", "reject"),
    ("accept", "complete", None, "accept"),
])
def test_a_soak_fault_rejects_and_an_unmeasured_cycle_leaves_it_incomplete(run: str, status: str, soak: str | None,
                                                                          expected: str) -> None:
    joined = with_soak(_run(run, status), soak)
    assert joined.verdict == expected and joined.status == status


def test_the_nodes_a_soak_fault_names_are_sent_back_but_a_pairs_end_is_not_guessed() -> None:
    from pytest_fabric.report.collect import soak_send_back
    from pytest_fabric.report.page import send_back_line as page_line
    from pytest_fabric.report.terminal import send_back_line

    soak = {"judgement": {"faults": [
        {"kind": "flag", "nodes": ["gpu07"]},  # its GPU throttled
        {"kind": "drift", "nodes": ["gpu01", "gpu02"]},  # a pair: which end, the soak cannot tell
        {"kind": "errored", "nodes": ["gpu09"]},  # not measured: no evidence about the node
    ]}}
    assert soak_send_back(soak) == ["gpu07"] and soak_send_back(None) == []
    assert send_back_line([], soak_send_back(soak)) == "nodes to send back: gpu07"
    assert "nodes to send back: gpu07" in page_line([], soak_send_back(soak))
