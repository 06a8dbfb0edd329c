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
    assert (lo.index, lo.name, lo.mtu_bytes, lo.state, lo.link_type) == (1, "lo", 65536, "UNKNOWN", "loopback")
    assert (eth0.name, eth0.mtu_bytes, eth0.state, eth0.mac, eth0.qlen) == ("eth0", 1500, "UP", "08:00:27:05:ae:4d", 1000)
    assert eth0.flags == ("BROADCAST", "MULTICAST", "UP", "LOWER_UP") and eth0.is_up
    assert eth0.qdisc == "pfifo_fast" and eth0.broadcast == "ff:ff:ff:ff:ff:ff"


def test_oneline_infiniband_vlan_altname() -> None:
    interfaces = {i.name: i for i in parse_ip_link((DATA / "ip-link" / "oneline-o-ib-and-vlan-constructed.txt").read_text())}
    assert interfaces["ib0"].mtu_bytes == 4092 and interfaces["ib0"].link_type == "infiniband"
    assert interfaces["eno1"].altnames == ("enp1s0f0",) and interfaces["eno1"].mtu_bytes == 9000
    vlan = interfaces["eno1.100"]
    assert (vlan.parent, vlan.state, vlan.is_up) == ("eno1", "DOWN", False)


def test_json() -> None:
    (eth,) = parse_ip_link('[{"ifindex":2,"ifname":"eth0","flags":["BROADCAST","UP"],"mtu":9000,"operstate":"UP",'
                           '"link_type":"ether","address":"aa:bb:cc:dd:ee:ff","txqlen":1000}]')
    assert (eth.name, eth.mtu_bytes, eth.state, eth.mac, eth.qlen) == ("eth0", 9000, "UP", "aa:bb:cc:dd:ee:ff", 1000)


def test_errors() -> None:
    with pytest.raises(UnrecognizedOutput, match="^ip-link"):
        parse_ip_link("    link/ether 08:00:27:05:ae:4d\n")
    with pytest.raises(ParseError, match="^ip-link"):
        parse_ip_link('[{"ifname": "eth0"}]')
