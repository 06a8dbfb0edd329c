"""ibdev2netdev (plain and -v) on the recorded corpus."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from pytest_fabric.parsers.base import ParseError, UnrecognizedOutput
from pytest_fabric.parsers.ibdev2netdev import parse_ibdev2netdev

Read = Callable[[str], str]


def test_plain_ipoib_all_up(corpus_text: Read) -> None:
    entries = parse_ibdev2netdev(corpus_text("ibdev2netdev/4x-mlx5-ipoib-all-up.txt"))
    assert [(e.device, e.port, e.netdev, e.is_up) for e in entries] == [(f"mlx5_{i}", 1, f"ib{i}", True) for i in range(4)]
    assert entries[0].pci_bdf is None


def test_connectx3_two_ports(corpus_text: Read) -> None:
    entries = parse_ibdev2netdev(corpus_text("ibdev2netdev/connectx3-mlx4-2port.txt"))
    assert [(e.device, e.port, e.netdev) for e in entries] == [("mlx4_0", 1, "ib0"), ("mlx4_0", 2, "ib1")]


def test_mixed_up_down(corpus_text: Read) -> None:
    entries = {e.device: e for e in parse_ibdev2netdev(corpus_text("ibdev2netdev/mixed-cx4lx-cx5-cx6-8dev-up-down.txt"))}
    assert sorted(d for d, e in entries.items() if e.is_up) == ["mlx5_2", "mlx5_3", "mlx5_5"]
    assert entries["mlx5_5"].netdev == "ib0"
    assert entries["mlx5_0"].netdev_state == "Down"


def test_verbose_pci_board_fw_state(corpus_text: Read) -> None:
    entries = {e.device: e for e in parse_ibdev2netdev(corpus_text("ibdev2netdev/mixed-verbose-v-pci-fw-state.txt"))}
    cx5 = entries["mlx5_2"]
    assert (cx5.pci_bdf, cx5.ca_type, cx5.psid, cx5.firmware) == ("0000:4b:00.0", "MT4119", "MCX515A-CCAT", "16.27.1016")
    assert (cx5.board, cx5.port_state, cx5.netdev, cx5.netdev_state) == ("CX515A - ConnectX-5 QSFP28", "ACTIVE", "ens6", "Up")
    assert entries["mlx5_0"].port_state == "DOWN"  # printed "(DOWN  )"
    cx6 = entries["mlx5_5"]
    assert cx6.board.startswith("ConnectX-6 VPI adapter card, HDR IB (200Gb/s)") and cx6.board.endswith("Socket Direct")
    assert cx6.firmware == "20.30.1004" and cx6.netdev == "ib0"
    vf = entries["mlx5_7"]
    assert (vf.ca_type, vf.psid, vf.board, vf.pci_bdf) == ("MT4120", "NA", "", "0000:4b:00.2")


def test_errors() -> None:
    with pytest.raises(UnrecognizedOutput, match="^ibdev2netdev"):
        parse_ibdev2netdev("hca_id: mlx5_0\n")
    with pytest.raises(ParseError, match=r"ibdev2netdev \(line 2\)"):
        parse_ibdev2netdev("mlx5_0 port 1 ==> ib0 (Up)\nmlx5_1 port one\n")
