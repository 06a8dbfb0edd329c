"""Comparing a run with a previous record: matched by check and subject, direction from the expectation."""

from __future__ import annotations

import pytest

from pytest_fabric.report.compare import (
    compare_check,
    comparison_warnings,
    index_checks,
    parse_tolerances,
)
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


def test_different_spellings_of_one_unit_kind_are_converted() -> None:
    before = make_check("sequential_read", "n1:/mnt", "passed", value=2000, unit="MB/s", expected=1000)
    now = make_check("sequential_read", "n1:/mnt", "passed", value=2.1, unit="GB/s", expected=1)
    assert compare_check(now, before)["change"] == 0.05


# -- values, not spellings; what "unchanged" may mean ------------------------------------------


def test_values_in_different_units_are_compared_as_values() -> None:
    before = make_check("download", "n1:mirror", "passed", value=50, unit="MB/s", expected=40)
    now = make_check("download", "n1:mirror", "passed", value=0.0425, unit="GB/s", expected=0.04)
    entry = compare_check(now, before)
    assert entry["status"] == "regressed"
    assert entry["change"] == -0.15
    assert entry["text"] == "was 0.05 GB/s, now 0.0425 GB/s (-15.0%)"


def test_units_of_different_kinds_are_not_compared() -> None:
    before = make_check("rdma_latency", "a<->b", "passed", value=2, unit="us", expected=2.5, op="<=")
    now = make_check("rdma_latency", "a<->b", "passed", value=2, unit="Gb/s", expected=2.5, op="<=")
    assert compare_check(now, before)["change"] is None


def test_failed_before_skipped_now_is_not_unchanged() -> None:
    before = _tcp("a<->b", "failed", 120.0)
    now = make_check("tcp_throughput", "a<->b", "skipped", message="the profile does not set tcp_throughput")
    entry = compare_check(now, before)
    assert entry["status"] == "not measured"
    assert entry["text"] == "not measured now (skipped; was failed at 120 Gb/s)"
    err = make_check("tcp_throughput", "a<->b", "error", message="b unreachable")
    assert compare_check(err, before)["status"] == "not measured"


def test_skipped_before_measured_now_is_new() -> None:
    before = make_check("tcp_throughput", "a<->b", "skipped", message="not set")
    entry = compare_check(_tcp("a<->b", "passed", 190.0), before)
    assert entry["status"] == "new" and entry["text"] == "measured now (was skipped)"


def test_both_skipped_is_unchanged() -> None:
    skipped = make_check("tcp_throughput", "a<->b", "skipped", message="not set")
    assert compare_check(skipped, skipped)["status"] == "unchanged"


# -- thresholds that fit the figure --------------------------------------------------------------


def _dns(ms: float) -> dict:
    return make_check("dns_resolve", "n1:mirror", "passed", value=ms, unit="ms", expected=100, op="<=", layer="egress")


def test_a_small_absolute_change_of_a_tiny_figure_is_noise() -> None:
    tolerances = parse_tolerances([])
    # 1.5 ms -> 1.6 ms is +6.7 %, beyond 5 %, but a DNS lookup varies by milliseconds.
    entry = compare_check(_dns(1.6), _dns(1.5), tolerances)
    assert entry["status"] == "unchanged"
    assert "within" in entry["text"] and "5 ms" in entry["text"]
    assert compare_check(_dns(30.0), _dns(1.5), tolerances)["status"] == "regressed"


def test_per_check_tolerance_from_the_command_line() -> None:
    tolerances = parse_tolerances(["dns_resolve=50%", "tcp_throughput=1%", "8"])
    assert compare_check(_dns(2.0), _dns(1.5), tolerances)["status"] == "unchanged"
    assert compare_check(_dns(2.5), _dns(1.5), tolerances)["status"] == "regressed"
    assert compare_check(_tcp("a<->b", "passed", 188.0), _tcp("a<->b", "passed", 190.0), tolerances)["status"] == "regressed"
    rdma = lambda v: make_check("rdma_bandwidth", "a<->b", "passed", value=v, unit="Gb/s", expected=180)  # noqa: E731
    assert compare_check(rdma(180.0), rdma(192.0), tolerances)["status"] == "unchanged"  # 6.25 % < 8 %


def test_tolerance_errors_say_what_to_write() -> None:
    with pytest.raises(ValueError, match="write PERCENT, CHECK=PERCENT or CHECK=QUANTITY"):
        parse_tolerances(["dns_resolve=fast"])
    with pytest.raises(ValueError, match="write PERCENT"):
        parse_tolerances(["lots"])


def test_the_checks_own_spread_of_repeats_widens_the_threshold() -> None:
    def rdma(v: float, repeats: list[float]) -> dict:
        return make_check("rdma_bandwidth", "a<->b", "passed", value=v, unit="Gb/s", expected=180,
                          extra={"repeats": {"values": repeats, "unit": "Gb/s"}})

    # Repeats 180..196 (spread 8.7 % of the median): a 6 % drop is within the figure's own noise.
    noisy = compare_check(rdma(180.5, [180.5, 176.0, 192.0]), rdma(192.0, [184.0, 192.0, 196.0]))
    assert noisy["status"] == "unchanged" and "spread of its repeats" in noisy["text"]
    steady = compare_check(rdma(180.5, [180.5, 180.0, 181.0]), rdma(192.0, [191.5, 192.0, 192.5]))
    assert steady["status"] == "regressed"


# -- records of other profiles or clusters -------------------------------------------------------


def _run(**over: object) -> dict:
    run = {"profile": "hdr200", "profile_sha256": "a" * 64, "cluster": "pod1", "inventory": "/x/inv.yaml",
           "nodes": ["n1", "n2"]}
    run.update(over)
    return run


def test_same_profile_and_cluster_gives_no_warning() -> None:
    assert comparison_warnings(_run(), _run()) == []


def test_another_profile_or_inventory_is_said() -> None:
    warnings = comparison_warnings(_run(profile="roce-small", profile_sha256="b" * 64, cluster="pod2",
                                        nodes=["n1", "n3"]), _run())
    assert warnings == [
        "the previous run used profile roce-small, this one hdr200",
        "the previous run measured cluster pod2, this one pod1",
        "the nodes differ: n3 only before, n2 only now",
    ]
    edited = comparison_warnings(_run(profile_sha256="b" * 64), _run())
    assert edited == ["profile hdr200 was edited since the previous run (sha256 bbbbbbbbbbbb, now aaaaaaaaaaaa)"]
