"""ip link show on the corpus and our one-line sample."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from pytest_fabric.parsers.base import ParseError, UnrecognizedOutput
from pytest_fabric.parsers.ip_link import parse_ip_link

Read = Callable[[str], str]
DATA = Path(__file__).resolve().parents[2] / "data"


def test_loopback_and_eth0(corpus_text: Read) -> None:
    lo, eth0 = parse_ip_link(corpus_text("ip-link/loopback-eth0-mtu1500.txt"))
    assert (lo.index, lo.name, lo.mtu_bytes, lo.state, lo.link_type) == (
        1,
        "lo",
        65536,
        "UNKNOWN",
        "loopback",
    )
    assert (eth0.name, eth0.mtu_bytes, eth0.state, eth0.mac, eth0.qlen) == (
        "eth0",
        1500,
        "UP",
        "08:00:27:05:ae:4d",
        1000,
    )
    assert eth0.flags == ("BROADCAST", "MULTICAST", "UP", "LOWER_UP") and eth0.is_up
    assert eth0.qdisc == "pfifo_fast" and eth0.broadcast == "ff:ff:ff:ff:ff:ff"


def test_oneline_infiniband_vlan_altname() -> None:
    interfaces = {
        i.name: i
        for i in parse_ip_link(
            (DATA / "ip-link" / "oneline-o-ib-and-vlan-constructed.txt").read_text()
        )
    }
    assert interfaces["ib0"].mtu_bytes == 4092 and interfaces["ib0"].link_type == "infiniband"
    assert interfaces["eno1"].altnames == ("enp1s0f0",) and interfaces["eno1"].mtu_bytes == 9000
    vlan = interfaces["eno1.100"]
    assert (vlan.parent, vlan.state, vlan.is_up) == ("eno1", "DOWN", False)


def test_json() -> None:
    (eth,) = parse_ip_link(
        '[{"ifindex":2,"ifname":"eth0","flags":["BROADCAST","UP"],"mtu":9000,"operstate":"UP",'
        '"link_type":"ether","address":"aa:bb:cc:dd:ee:ff","txqlen":1000}]'
    )
    assert (eth.name, eth.mtu_bytes, eth.state, eth.mac, eth.qlen) == (
        "eth0",
        9000,
        "UP",
        "aa:bb:cc:dd:ee:ff",
        1000,
    )


def test_errors() -> None:
    with pytest.raises(UnrecognizedOutput, match="^ip-link"):
        parse_ip_link("    link/ether 08:00:27:05:ae:4d\n")
    with pytest.raises(ParseError, match="^ip-link"):
        parse_ip_link('[{"ifname": "eth0"}]')


# The brief form (issue 20): ip -br link, recorded with iproute2 6.1.0.


def test_brief_link_unknown_state_peer_and_flags() -> None:
    links = parse_ip_link(
        (DATA / "ip-link" / "brief-br-link-lo-ifb-eth0-veth-iproute2-6.1.0.txt").read_text()
    )
    by_name = {link.name: link for link in links}
    assert list(by_name)[:4] == ["lo", "ifb0", "ifb1", "eth0"] and len(links) == 6
    lo, ifb0, eth0 = by_name["lo"], by_name["ifb0"], by_name["eth0"]
    assert (lo.state, lo.mac, lo.flags, lo.index, lo.mtu_bytes) == (
        "UNKNOWN",
        "00:00:00:00:00:00",
        ("LOOPBACK", "UP", "LOWER_UP"),
        None,
        None,
    )
    assert (
        (ifb0.state, ifb0.is_up) == ("DOWN", False)
        and eth0.is_up
        and eth0.mac == "02:fc:00:00:00:01"
    )
    veth = links[-1]
    assert veth.name.endswith("h01") and veth.parent == "if2" and veth.state == "UP"
    assert links.skipped == () and links.skipped_count == 0


def test_brief_link_without_address_and_unknown_lines() -> None:
    text = (
        "Warning: Permanently added 'gpu01' (ED25519) to the list of known hosts.\n"
        "wg0              UNKNOWN        <POINTOPOINT,NOARP,UP,LOWER_UP> \n"
        "ib0              UP             00:00:10:29:fe:80:00:00:00:00:00:00:b8:ce:f6:03:00:a5:3e:5e <BROADCAST,MULTICAST,UP,LOWER_UP> \n"
        "eth0.100@eth0    LOWERLAYERDOWN 02:fc:00:00:00:01 <NO-CARRIER,BROADCAST,MULTICAST,UP,M-DOWN> \n"
        "something the parser does not know\n"
    )
    wg0, ib0, vlan = links = parse_ip_link(text)
    assert (wg0.mac, wg0.state, wg0.is_up) == (None, "UNKNOWN", True)
    assert ib0.mac is not None and ib0.mac.endswith("a5:3e:5e")
    assert (vlan.name, vlan.parent, vlan.state, vlan.is_up) == (
        "eth0.100",
        "eth0",
        "LOWERLAYERDOWN",
        False,
    )
    assert links.skipped == (
        "Warning: Permanently added 'gpu01' (ED25519) to the list of known hosts.",
        "something the parser does not know",
    )


def test_a_banner_before_the_first_interface_is_skipped_not_fatal(corpus_text: Read) -> None:
    links = parse_ip_link(
        "Last login: Mon Dec  1 09:00:00 2026\n" + corpus_text("ip-link/loopback-eth0-mtu1500.txt")
    )
    assert [link.name for link in links] == ["lo", "eth0"] and links[1].mtu_bytes == 1500
    assert links.skipped == ("Last login: Mon Dec  1 09:00:00 2026",)
