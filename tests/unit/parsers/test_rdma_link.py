"""rdma link on the recorded corpus."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from pytest_fabric.parsers.base import ParseError, UnrecognizedOutput
from pytest_fabric.parsers.rdma_link import parse_rdma_link

Read = Callable[[str], str]


def test_irdma_one_down_disabled(corpus_text: Read) -> None:
    down, up = parse_rdma_link(corpus_text("rdma-link/intel-e810-irdma-one-port-down-disabled.txt"))
    assert (down.device, down.port, down.state, down.physical_state, down.netdev) == ("irdma0", 1, "DOWN", "DISABLED", "enp23s0f0")
    assert (up.device, up.state, up.physical_state, up.netdev) == ("irdma1", "ACTIVE", "LINK_UP", "enp23s0f1")


def test_soft_roce_with_carriage_return(corpus_text: Read) -> None:
    (link,) = parse_rdma_link(corpus_text("rdma-link/soft-roce-rxe-single.txt"))
    assert (link.device, link.port, link.state, link.physical_state, link.netdev) == ("rxe_eth0", 1, "ACTIVE", "LINK_UP", "ens4")


def test_infiniband_line_and_json() -> None:
    (ib,) = parse_rdma_link("link mlx5_0/1 subnet_prefix fe80:0000:0000:0000 lid 5 sm_lid 1 lmc 0 state ACTIVE physical_state LINK_UP\n")
    assert (ib.lid, ib.sm_lid, ib.netdev, ib.attributes["lmc"]) == (5, 1, None, "0")
    (js,) = parse_rdma_link('[{"ifindex":1,"ifname":"mlx5_0","port":1,"state":"ACTIVE","physical_state":"LINK_UP","netdev":"ens1f0","netdev_index":4}]')
    assert (js.device, js.state, js.netdev) == ("mlx5_0", "ACTIVE", "ens1f0")


def test_errors() -> None:
    with pytest.raises(UnrecognizedOutput, match="^rdma-link"):
        parse_rdma_link("mlx5_0 port 1 ==> ib0 (Up)\n")
    with pytest.raises(ParseError, match=r"rdma-link \(line 1\): odd number"):
        parse_rdma_link("link mlx5_0/1 state\n")
