"""iblinkinfo on the recorded corpus."""

from __future__ import annotations

from collections.abc import Callable
from decimal import Decimal

import pytest

from pytest_fabric.parsers.base import UnrecognizedOutput
from pytest_fabric.parsers.iblinkinfo import nominal_lane_rate_gbps, parse_iblinkinfo

Read = Callable[[str], str]


def test_quantum_switch(corpus_text: Read) -> None:
    ports = {p.port: p for p in parse_iblinkinfo(corpus_text("iblinkinfo/quantum-hdr-switch-ports-polling-and-edr-downgrade.txt"))}
    assert sorted(ports) == list(range(1, 42))
    down = ports[1]
    assert (down.state, down.physical_state, down.width, down.rate_gbps, down.peer_lid, down.peer_name) == (
        "Down", "Polling", None, None, None, None)
    assert (down.node_type, down.node_guid, down.node_name) == ("Switch", "0x08c0eb0300add04e", "Quantum Mellanox Technologies")
    edr = ports[21]
    assert (edr.width, edr.lanes, edr.lane_speed_gbps, edr.rate_gbps) == ("4X", 4, Decimal("25.78125"), Decimal(100))
    assert (edr.state, edr.physical_state, edr.peer_lid, edr.peer_port, edr.peer_name) == ("Active", "LinkUp", 40, 1, "node3 HCA-2")
    assert edr.downgraded and edr.could_be_lane_speed_gbps == Decimal("53.125") and edr.could_be_rate_gbps == 200
    assert sorted(p.port for p in ports.values() if p.downgraded) == [21, 22, 23, 24]
    isl = ports[40]
    assert (isl.rate_gbps, isl.peer_lid, isl.peer_port, isl.peer_name, isl.downgraded) == (
        Decimal(200), 4, 40, "MF0;d32-03-1:MQM8700/U1", False)
    assert sum(p.state == "Active" for p in ports.values()) == 6


def test_ca_header_line_mode_and_width_hint() -> None:
    text = (
        'CA: node1 HCA-1:\n'
        '      0x08c0eb0300ea50e6     18    1[  ] ==( 4X      53.125 Gbps Active/  LinkUp)==>      10   21[  ] "Quantum" ( )\n'
        '0x08c0eb0300add04e "Quantum Mellanox Technologies"     10    5[  ] ==( 1X      53.125 Gbps Active/  LinkUp)==>  7  1[  ] "n7" ( Could be 4X 53.125 Gbps)\n'
    )
    ca, switch = parse_iblinkinfo(text)
    assert (ca.node_type, ca.node_name, ca.lid, ca.rate_gbps) == ("CA", "node1 HCA-1", 18, Decimal(200))
    assert (switch.node_guid, switch.node_name, switch.lanes, switch.rate_gbps) == (
        "0x08c0eb0300add04e", "Quantum Mellanox Technologies", 1, Decimal(50))
    assert (switch.could_be_width, switch.could_be_rate_gbps) == ("4X", Decimal(200))


def test_nominal_rates() -> None:
    assert nominal_lane_rate_gbps(Decimal("14.0625")) * 4 == 56
    assert nominal_lane_rate_gbps(Decimal("106.25")) * 4 == 400
    assert nominal_lane_rate_gbps(Decimal("10.0")) == 10


def test_not_iblinkinfo() -> None:
    with pytest.raises(UnrecognizedOutput, match="^iblinkinfo"):
        parse_iblinkinfo("Switch: 0x1 foo:\n")
