"""ibv_devinfo (plain and -v) on the recorded corpus."""

from __future__ import annotations

from collections.abc import Callable
from decimal import Decimal

import pytest

from pytest_fabric.parsers.base import ParseError, ToolReportedError, UnrecognizedOutput
from pytest_fabric.parsers.ibv_devinfo import parse_ibv_devinfo

Read = Callable[[str], str]


def test_mixed_roce_and_ib(corpus_text: Read) -> None:
    devices = {d.name: d for d in parse_ibv_devinfo(corpus_text("ibv_devinfo/mixed-cx4lx-cx5-cx6-8hca-roce-and-ib.txt"))}
    assert len(devices) == 8
    ib = devices["mlx5_5"]
    assert (ib.fw_ver, ib.vendor_id, ib.vendor_part_id, ib.phys_port_cnt) == ("20.30.1004", 0x02C9, 4123, 1)
    port = ib.ports[0]
    assert (port.state, port.state_code, port.active_mtu_bytes, port.max_mtu_bytes) == ("PORT_ACTIVE", 4, 4096, 4096)
    assert (port.sm_lid, port.port_lid, port.link_layer) == (4, 18, "InfiniBand")
    roce = devices["mlx5_2"].ports[0]
    assert (roce.state, roce.active_mtu_bytes, roce.link_layer) == ("PORT_ACTIVE", 1024, "Ethernet")
    assert devices["mlx5_0"].ports[0].state == "PORT_DOWN"
    assert devices["mlx5_0"].node_guid == "08c0:eb03:0040:8f1a"


def test_trailing_spaces_and_no_device_ports_header(corpus_text: Read) -> None:
    (device,) = parse_ibv_devinfo(corpus_text("ibv_devinfo/connectx3-mlx4-2port-ib-active-eth-down.txt"))
    assert device.name == "mlx4_0" and device.board_id == "MT_1090110018"
    one, two = device.ports
    assert (one.port, one.state, one.active_mtu_bytes, one.port_lid, one.link_layer) == (1, "PORT_ACTIVE", 4096, 10, "InfiniBand")
    assert (two.port, two.state, two.active_mtu_bytes, two.link_layer) == (2, "PORT_DOWN", 1024, "Ethernet")


def test_tabs_two_hcas(corpus_text: Read) -> None:
    devices = parse_ibv_devinfo(corpus_text("ibv_devinfo/connectx3-2hca-port2-down.txt"))
    assert [d.name for d in devices] == ["mlx4_1", "mlx4_0"]
    assert [(p.port, p.state) for p in devices[1].ports] == [(1, "PORT_ACTIVE"), (2, "PORT_DOWN")]
    assert devices[1].ports[0].sm_lid == 18 and devices[1].ports[0].port_lid == 32
    assert devices[0].transport == "InfiniBand (0)"


def test_verbose_polling_port(corpus_text: Read) -> None:
    (device,) = parse_ibv_devinfo(corpus_text("ibv_devinfo/connectx3-verbose-port2-polling.txt"))
    (port,) = device.ports
    assert (port.port, port.state, port.phys_state, port.phys_state_code) == (2, "PORT_DOWN", "POLLING", 2)
    assert (port.active_width, port.active_speed, port.active_speed_gbps, port.rate_gbps) == ("4X", "2.5 Gbps", Decimal("2.5"), Decimal(10))
    assert port.gids == ((0, "fe80:0000:0000:0000:7cfe:9003:00a5:95c2"),)
    assert device.capabilities["max_qp"] == "393144"
    assert device.capabilities["atomic_cap"] == "ATOMIC_HCA (1)"


def test_verbose_mlnx_ofed_roce(corpus_text: Read) -> None:
    devices = {d.name: d for d in parse_ibv_devinfo(corpus_text("ibv_devinfo/verbose-v-cx4lx-cx5-mlnx-ofed-roce.txt"))}
    assert list(devices) == ["mlx5_0", "mlx5_2", "mlx5_4"]
    cx5 = devices["mlx5_2"].ports[0]
    assert (cx5.state, cx5.phys_state, cx5.active_speed_gbps, cx5.rate_gbps) == ("PORT_ACTIVE", "LINK_UP", Decimal("25.0"), Decimal(100))
    assert len(cx5.gids) == 4 and cx5.gids[2] == (2, "0000:0000:0000:0000:0000:ffff:ac11:f22f")
    disabled = devices["mlx5_0"].ports[0]
    assert (disabled.phys_state, disabled.phys_state_code, disabled.active_speed) == ("DISABLED", 3, "10.0 Gbps")
    assert devices["mlx5_0"].capabilities["max_qp"] == "262144"


def test_errors() -> None:
    with pytest.raises(ToolReportedError, match="ibv_devinfo.*No IB devices found"):
        parse_ibv_devinfo("No IB devices found\n")
    with pytest.raises(UnrecognizedOutput, match="^ibv_devinfo"):
        parse_ibv_devinfo("link mlx5_0/1 state ACTIVE\n")
    with pytest.raises(ParseError, match=r"ibv_devinfo \(line 3\): active_mtu 'big'"):
        parse_ibv_devinfo("hca_id: mlx5_0\n\tport: 1\n\t\tactive_mtu: big\n\t\tstate: PORT_ACTIVE (4)\n")
