"""The simulated cluster's /16 addressing and kernel limits, as arithmetic (a 512-node cluster is
too slow for the suite; tests/integration/test_simcluster_cpu_free.py builds a small one)."""

from __future__ import annotations

import ipaddress

import pytest
from simcluster.cluster import (
    FIRST_HOST,
    MAX_NODES,
    SECOND_OCTETS,
    free_second_octet,
    neighbour_limits,
    node_address,
)


def test_first_nodes_keep_the_addresses_of_the_old_24() -> None:
    assert node_address(231, 0) == f"10.231.0.{FIRST_HOST}"
    assert node_address(231, 1) == "10.231.0.12"
    assert node_address(231, 243) == "10.231.0.254"


def test_after_254_the_third_octet_moves_on_and_skips_0_and_255() -> None:
    assert node_address(231, 244) == "10.231.1.1"
    assert node_address(231, 511) == "10.231.2.14"


def test_every_node_of_a_full_cluster_is_a_distinct_host_of_the_16_and_not_the_bridge() -> None:
    net = ipaddress.ip_network("10.220.0.0/16")
    addresses = [ipaddress.ip_address(node_address(220, i)) for i in range(MAX_NODES)]
    assert len(set(addresses)) == MAX_NODES
    assert ipaddress.ip_address("10.220.0.1") not in addresses  # the bridge
    for address in addresses:
        assert address in net
        assert int(address) & 0xFF not in (0, 255)


def test_index_beyond_a_bridge_is_refused() -> None:
    with pytest.raises(ValueError, match="node index must be 0..999"):
        node_address(231, MAX_NODES)


def test_a_16_in_use_is_skipped_and_the_seed_spreads_guesses() -> None:
    first = SECOND_OCTETS[0]
    used = f"inet 10.{first}.0.1/16 scope global fs1br\n"
    assert free_second_octet(used, 0) == first + 1
    assert free_second_octet("", 0) != free_second_octet("", 7)
    # a /24 of some other network inside the /16 makes the whole /16 taken, as it must
    assert free_second_octet(f"10.{first}.44.0/24 dev docker0\n", 0) == first + 1


def test_no_free_16_is_none() -> None:
    used = "".join(f"10.{x}.0.1/16\n" for x in SECOND_OCTETS)
    assert free_second_octet(used, 3) is None


def test_neighbour_limits_grow_with_the_cluster_and_are_never_lowered() -> None:
    # the kernel's defaults hold a small cluster; 512 nodes need far more than gc_thresh3 = 1024
    assert neighbour_limits(8, [128, 512, 1024]) == [128, 512, 1024]
    low, mid, high = neighbour_limits(512, [128, 512, 1024])
    assert low < mid < high and high >= 512 * 16
    assert neighbour_limits(512, [100_000, 100_000, 100_000]) == [100_000, 100_000, 100_000]
