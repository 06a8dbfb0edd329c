"""ibstat on the recorded corpus."""

from __future__ import annotations

from collections.abc import Callable
from decimal import Decimal

import pytest

from pytest_fabric.parsers.base import ParseError, ToolReportedError, UnrecognizedOutput
from pytest_fabric.parsers.ibstat import parse_ibstat

Read = Callable[[str], str]


def test_h100_ndr_all_active_plus_bond(corpus_text: Read) -> None:
    cas = {ca.name: ca for ca in parse_ibstat(corpus_text("ibstat/h100-cx7-ndr-8x-ib-plus-eth-all-active.txt"))}
    assert list(cas) == [f"mlx5_{i}" for i in (0, 1, 4, 5, 6, 7, 8, 9)] + ["mlx5_bond_0"]
    mlx5_0 = cas["mlx5_0"]
    assert (mlx5_0.ca_type, mlx5_0.firmware_version, mlx5_0.node_guid) == ("MT4129", "28.41.1000", "0x58a2e10300a7820e")
    port = mlx5_0.ports[0]
    assert (port.port, port.state, port.physical_state, port.rate_gbps) == (1, "Active", "LinkUp", Decimal(400))
    assert (port.base_lid, port.sm_lid, port.link_layer) == (128, 1, "InfiniBand")
    assert port.rate.display("Gb/s") == "400 Gb/s"
    assert cas["mlx5_bond_0"].ports[0].link_layer == "Ethernet"
    assert cas["mlx5_bond_0"].ports[0].rate_gbps == 200
    assert sum(p.is_active for ca in cas.values() for p in ca.ports) == 9


def test_some_down_disabled(corpus_text: Read) -> None:
    cas = {ca.name: ca for ca in parse_ibstat(corpus_text("ibstat/h100-cx7-some-down-disabled.txt"))}
    down = sorted(name for name, ca in cas.items() if ca.ports[0].state == "Down")
    assert down == ["mlx5_2", "mlx5_7", "mlx5_8"]
    assert cas["mlx5_2"].ports[0].physical_state == "Disabled"
    assert cas["mlx5_2"].ports[0].rate_gbps == 40
    assert cas["mlx5_10"].ports[0].base_lid == 828
    assert cas["mlx5_0"].ports[0].sm_lid == 334


def test_roce_down_polling(corpus_text: Read) -> None:
    cas = {ca.name: ca for ca in parse_ibstat(corpus_text("ibstat/h100-cx7-roce-400g-down-polling.txt"))}
    assert cas["mlx5_11"].ports[0].state == "Down"
    assert cas["mlx5_11"].ports[0].physical_state == "Polling"
    assert cas["mlx5_5"].ports[0].physical_state == "Disabled"
    assert {ca.ports[0].link_layer for ca in cas.values()} == {"Ethernet"}
    assert cas["mlx5_1"].ca_type == "MT4125" and cas["mlx5_1"].ports[0].rate_gbps == 100
    assert cas["mlx5_1"].ports[0].port_guid == "0x0000000000000000"


def test_connectx3_two_cas_two_ports(corpus_text: Read) -> None:
    cas = parse_ibstat(corpus_text("ibstat/connectx3-fdr56-2ca-2port-active.txt"))
    assert [ca.name for ca in cas] == ["mlx4_0", "mlx4_1"]
    assert cas[0].number_of_ports == 2 and len(cas[0].ports) == 2
    assert [p.base_lid for ca in cas for p in ca.ports] == [10, 12, 1, 4]
    assert {p.rate_gbps for ca in cas for p in ca.ports} == {Decimal(56)}
    assert cas[1].ports[1].port_guid == "0xf45214030033b852"
    assert cas[0].ports[0].capability_mask == 0x02514868


def test_ibpanic_is_a_tool_reported_error(corpus_text: Read) -> None:
    with pytest.raises(ToolReportedError) as info:
        parse_ibstat(corpus_text("ibstat/a100-cx6-hdr-200g-ibpanic-missing-device.txt"))
    message = str(info.value)
    assert message.startswith("ibstat (line ")
    assert "ibpanic" in message and "stat of IB device 'mlx5_8' failed" in message
    partial = info.value.partial_result  # type: ignore[attr-defined]
    assert [ca.name for ca in partial] == [f"mlx5_{i}" for i in range(8)]
    assert partial[0].ports[0].rate_gbps == 200


def test_truncated_port_is_an_error_naming_the_port() -> None:
    text = "CA 'mlx5_0'\n\tCA type: MT4129\n\tPort 1:\n\t\tState: Active\n"
    with pytest.raises(ParseError, match=r"ibstat \(line 3\): CA 'mlx5_0' port 1 has no Physical state, Rate"):
        parse_ibstat(text)


@pytest.mark.parametrize("text", ["", "   \n", "mlx5_0\nmlx5_1\n", "some other tool\n"])
def test_not_ibstat(text: str) -> None:
    with pytest.raises(UnrecognizedOutput, match="^ibstat"):
        parse_ibstat(text)


def test_bad_rate_names_line() -> None:
    text = "CA 'mlx5_0'\n\tPort 1:\n\t\tState: Active\n\t\tRate: fast\n"
    with pytest.raises(ParseError, match=r"line 4.*Rate 'fast'"):
        parse_ibstat(text)
