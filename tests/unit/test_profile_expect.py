"""``--expect`` overrides: a bound it sets names ``--expect`` as its source, not the profile's."""

from __future__ import annotations

from pytest_fabric.checks.builtin import load_profile


def _mtu_source(*overrides: str) -> str | None:
    return load_profile("localhost", list(overrides)).expectations("inter_node", "mtu")[0].source


def test_an_overridden_bound_names_expect_as_its_source() -> None:
    # Before: "expected value from: Ethernet minimum; loopback reports 65536" for a floor of 100000
    # that no profile wrote.
    assert _mtu_source("inter_node.mtu.min=100000") == "--expect inter_node.mtu.min=100000"
    assert _mtu_source("inter_node.mtu=9000") == "--expect inter_node.mtu=9000"


def test_the_profiles_source_stays_where_expect_sets_no_bound() -> None:
    assert _mtu_source() == "Ethernet minimum; loopback reports 65536"
    profile = load_profile("localhost", ["inter_node.tcp_throughput.duration=1 s"])
    assert profile.expectations("inter_node", "tcp_throughput")[0].source == "a sanity floor for loopback; real links use '90% line'"


def test_an_explicit_source_wins() -> None:
    assert _mtu_source("inter_node.mtu.min=9000", "inter_node.mtu.source=jumbo frames") == "jumbo frames"
