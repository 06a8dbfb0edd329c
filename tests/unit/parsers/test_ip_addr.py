"""ip addr in its one-line (-o) and brief (-br) forms, both recorded with iproute2 6.1.0."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_fabric.parsers.base import UnrecognizedOutput
from pytest_fabric.parsers.ip_addr import interface_with_address, parse_ip_addr

DATA = Path(__file__).resolve().parents[2] / "data" / "ip-addr"


def test_oneline() -> None:
    addresses = parse_ip_addr((DATA / "o-addr-show-dev-vm.txt").read_text())
    assert [(a.index, a.interface, a.family, a.address, a.prefix_length) for a in addresses][
        :3
    ] == [
        (1, "lo", "inet", "127.0.0.1", 8),
        (1, "lo", "inet6", "::1", 128),
        (4, "eth0", "inet", "192.0.2.2", 24),
    ]
    assert interface_with_address(addresses, "fd00::2") == "eth0" and addresses.skipped == ()


def test_brief_every_address_of_a_line_no_address_lines_and_peer_names() -> None:
    addresses = parse_ip_addr(
        (DATA / "brief-br-addr-lo-ifb-eth0-veth-iproute2-6.1.0.txt").read_text()
    )
    eth0 = [
        (a.family, a.address, a.prefix_length, a.state) for a in addresses if a.interface == "eth0"
    ]
    assert eth0 == [
        ("inet", "192.0.2.2", 24, "UP"),
        ("inet6", "fd00::2", 64, "UP"),
        ("inet6", "fe80::fc:ff:fe00:1", 64, "UP"),
    ]
    assert [(a.address, a.state) for a in addresses if a.interface == "lo"] == [
        ("127.0.0.1", "UNKNOWN"),
        ("::1", "UNKNOWN"),
    ]
    assert addresses.without_address == ("ifb0", "ifb1")
    veth = addresses[-1]
    assert veth.interface.endswith("h01") and "@" not in veth.interface and veth.index is None
    assert interface_with_address(addresses, "192.0.2.2") == "eth0"
    assert addresses.skipped == ()


def test_lines_of_neither_shape_are_skipped_and_listed() -> None:
    text = "bash: warning: setlocale: LC_ALL: cannot change locale\neth0             UP             10.0.0.5/24 \n"
    (address,) = addresses = parse_ip_addr(text)
    assert (address.interface, address.address) == ("eth0", "10.0.0.5")
    assert addresses.skipped == ("bash: warning: setlocale: LC_ALL: cannot change locale",)


@pytest.mark.parametrize("text", ["", "ifb0             DOWN           \n", "hello\n"])
def test_no_address_at_all_is_unrecognized(text: str) -> None:
    with pytest.raises(UnrecognizedOutput, match="^ip-addr"):
        parse_ip_addr(text)


def test_brief_point_to_point_address_is_the_local_one() -> None:
    (local, v6) = parse_ip_addr(
        "wg0              UNKNOWN        10.8.0.1 peer 10.8.0.2/32 fd42::1/64 \n"
    )
    assert (local.address, local.prefix_length, local.family) == ("10.8.0.1", 32, "inet")
    assert (v6.address, v6.family) == ("fd42::1", "inet6")
