"""Inter-node, per node and per port: the RDMA ports are there, up, at full rate, and clean."""

import pytest

from pytest_fabric.judge.verdict import Measurement
from pytest_fabric.run.cluster import NodeHandle
from pytest_fabric.run.fixtures import HcaHandle, Judge

pytestmark = pytest.mark.inter_node


def test_link_layer(node: NodeHandle, link_layer: Measurement, judge: Judge) -> None:
    """The node's RDMA ports run the profile's link layer (InfiniBand, or Ethernet for RoCE)."""
    judge(link_layer)


def test_ports(node: NodeHandle, ports: Measurement, judge: Judge) -> None:
    """The node has at least the active RDMA ports the profile counts, or every port it (or the inventory) names."""
    judge(ports)


def test_port_state(hca: HcaHandle, port_state: Measurement, judge: Judge) -> None:
    """Each expected port is Active (LinkUp), not Down, Polling or Initializing."""
    judge(port_state)


def test_port_rate(hca: HcaHandle, port_rate: Measurement, judge: Judge) -> None:
    """Each port trained at the rate bought: a 200G port that came up at 100G fails."""
    judge(port_rate)


def test_roce(node: NodeHandle, roce: Measurement, judge: Judge) -> None:
    """Every RoCE port is lossless: trust mode, PFC on the right priorities, ECN; a port that differs fails by name."""
    judge(roce)


def test_error_counters(hca: HcaHandle, error_counters: Measurement, judge: Judge) -> None:
    """No symbol, link-downed, receive or link-integrity error grew at either end of the port's link during the run."""
    judge(error_counters)
