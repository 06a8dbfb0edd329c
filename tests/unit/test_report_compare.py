"""Comparing a run with a previous record: matched by check and subject, direction from the expectation."""

from __future__ import annotations

from pytest_fabric.report.compare import compare_check, index_checks
from pytest_fabric.report.testing import make_check


def _tcp(subject: str, outcome: str, value: float) -> dict:
    return make_check("tcp_throughput", subject, outcome, value=value, unit="Gb/s", expected=180)


def test_matched_by_check_and_subject_not_nodeid() -> None:
    before = [_tcp("a<->b", "passed", 191.2), make_check("rdma_latency", "a<->b", "passed", value=1.9, unit="us",
                                                         expected=2.5, op="<=")]
    now = dict(_tcp("a<->b", "failed", 120.5), nodeid="moved/test_x.py::test_tcp[a<->b]")
    index = index_checks(before)
    entry = compare_check(now, index.get(("tcp_throughput", "a<->b")))
    assert entry["status"] == "newly failing"
    assert entry["text"] == "newly failing (was passed): was 191.2 Gb/s, now 120.5 Gb/s (-37.0%)"
    assert entry["measured"] == {"value": 191.2, "unit": "Gb/s"} and entry["change"] == -0.369770
    assert index.get(("tcp_throughput", "a<->c")) is None


def test_regressed_improved_unchanged_within_tolerance() -> None:
    assert compare_check(_tcp("a<->b", "passed", 181.0), _tcp("a<->b", "passed", 199.0))["status"] == "regressed"
    assert compare_check(_tcp("a<->b", "passed", 199.0), _tcp("a<->b", "passed", 181.0))["status"] == "improved"
    assert compare_check(_tcp("a<->b", "passed", 190.0), _tcp("a<->b", "passed", 191.0))["status"] == "unchanged"
    assert compare_check(_tcp("a<->b", "passed", 190.0), _tcp("a<->b", "passed", 199.0), 0.10)["status"] == "unchanged"


def test_latency_regresses_when_it_rises() -> None:
    def lat(v: float) -> dict:
        return make_check("rdma_latency", "a<->b", "passed", value=v, unit="us", expected=2.5, op="<=")

    assert compare_check(lat(2.2), lat(1.8))["status"] == "regressed"
    assert compare_check(lat(1.8), lat(2.2))["status"] == "improved"


def test_fixed_new_and_errors() -> None:
    assert compare_check(_tcp("a<->b", "passed", 190.0), _tcp("a<->b", "failed", 120.0))["status"] == "fixed"
    assert compare_check(_tcp("a<->b", "passed", 190.0), None) == {"status": "new", "text": "new check"}
    err = make_check("tcp_throughput", "a<->b", "error", message="b unreachable")
    entry = compare_check(err, _tcp("a<->b", "passed", 190.0))
    assert entry["status"] == "newly failing" and entry["change"] is None and entry["text"] == "newly failing (was passed)"


def test_different_units_are_not_compared_as_numbers() -> None:
    before = make_check("sequential_read", "n1:/mnt", "passed", value=2000, unit="MB/s", expected=1000)
    now = make_check("sequential_read", "n1:/mnt", "passed", value=2.1, unit="GB/s", expected=1)
    assert compare_check(now, before)["change"] is None
