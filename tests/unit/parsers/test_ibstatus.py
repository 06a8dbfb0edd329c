"""ibstatus on the recorded corpus."""

from __future__ import annotations

from collections.abc import Callable
from decimal import Decimal

import pytest

from pytest_fabric.parsers.base import ParseError, UnrecognizedOutput
from pytest_fabric.parsers.ibstatus import parse_ibstatus

Read = Callable[[str], str]


def test_a100_hdr_8x_active_and_ethernet_mlx5_8(corpus_text: Read) -> None:
    ports = parse_ibstatus(corpus_text("ibstatus/a100-cx6-hdr-200g-8x-active.txt"))
    assert [p.device for p in ports] == [f"mlx5_{i}" for i in range(9)]
    first = ports[0]
    assert (first.state, first.state_code, first.physical_state, first.physical_state_code) == ("ACTIVE", 4, "LinkUp", 5)
    assert (first.rate_gbps, first.rate_text, first.width, first.link_layer) == (Decimal(200), "4X HDR", "4X", "InfiniBand")
    assert first.base_lid == 0x33BF and first.sm_lid == 1
    last = ports[-1]
    assert (last.rate_gbps, last.rate_text, last.link_layer, last.default_gid) == (Decimal(40), "4X QDR", "Ethernet", "unknown")


def test_roce_port_down_disabled(corpus_text: Read) -> None:
    down, up = parse_ibstatus(corpus_text("ibstatus/roce-cx-port-down-disabled-and-100g-active.txt"))
    assert (down.device, down.state, down.physical_state, down.rate_gbps) == ("mlx5_0", "DOWN", "Disabled", Decimal(40))
    assert (up.device, up.state, up.rate_gbps, up.rate_text) == ("mlx5_1", "ACTIVE", Decimal(100), "4X EDR")
    assert up.link_layer == "Ethernet"


def test_connectx3_tabs(corpus_text: Read) -> None:
    ports = parse_ibstatus(corpus_text("ibstatus/connectx3-fdr56-2port.txt"))
    assert [(p.device, p.port, p.rate_gbps, p.rate_text, p.sm_lid) for p in ports] == [
        ("mlx4_0", 1, Decimal(56), "4X FDR", 3),
        ("mlx4_0", 2, Decimal(56), "4X FDR", 2),
    ]


def test_missing_rate_and_garbage() -> None:
    with pytest.raises(ParseError, match="ibstatus.*no 'rate' line"):
        parse_ibstatus("Infiniband device 'mlx5_0' port 1 status:\n\tstate:\t4: ACTIVE\n\tphys state:\t5: LinkUp\n")
    with pytest.raises(UnrecognizedOutput, match="^ibstatus"):
        parse_ibstatus("CA 'mlx5_0'\n")
