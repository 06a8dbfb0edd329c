"""nic_pcie judges only the NICs of the rails the acceptance is about (tests/data/lspci: a recorded HGX H100,
eight ConnectX-7 rails at Gen5 x16 and two front-end ConnectX-6 Dx at Gen4): the front-end NIC, right
for what it is, no longer fails the node."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_fabric.config.inventory import Node
from pytest_fabric.config.units import parse_quantity
from pytest_fabric.judge.verdict import Expectation, Op, judge
from pytest_fabric.probes import gpu
from pytest_fabric.probes.base import MeasurementError
from pytest_fabric.run.cluster import NodeHandle
from pytest_fabric.transport.mock import MockTransport
from pytest_fabric.transport.pool import ConnectionPool

LSPCI = (Path(__file__).resolve().parents[1] / "data" / "lspci"
         / "hgx-h100-cx7-rails-cx6dx-frontend-mellanox-only.txt").read_text()
RAILS = ["1a", "3c", "4d", "5e", "9c", "bc", "cc", "dc"]  # the ConnectX-7s
FRONT = ["1b:00.0", "1b:00.1", "9d:00.0", "9d:00.1"]  # the ConnectX-6 Dx
SYSFS = "".join(f"mlx5_{i} /sys/devices/pci0000:00/0000:{bus}:00.0\n" for i, bus in enumerate(RAILS)) + "".join(
    f"mlx5_{8 + i} /sys/devices/pci0000:00/0000:{bdf}\n" for i, bdf in enumerate(FRONT))
GEN5 = Expectation("intra_node", "nic_pcie", Op.MIN, parse_quantity(5), "intra_node.nic_pcie.generation")


def _node() -> NodeHandle:
    transport = MockTransport("gpu01", {r"^lspci -vv -d 15b3:$": LSPCI, r"/sys/class/infiniband": SYSFS})
    return NodeHandle(Node(name="gpu01", host="10.0.0.1"), ConnectionPool(lambda _n: transport))


def test_every_function_is_judged_without_named_rails_and_the_front_end_nic_fails_the_node() -> None:
    measured = gpu.nic_pcie(_node())
    assert measured.value == "Gen4 x16" and "12 NIC function(s)" in measured.detail
    assert not judge("gpu01", measured, GEN5).passed


def test_named_rails_judge_only_their_nics() -> None:
    measured = gpu.nic_pcie(_node(), [f"mlx5_{i}/1" for i in range(8)])
    assert measured.value == "Gen5 x16" and "8 NIC function(s)" in measured.detail
    assert "not judged (not a named rail's NIC): mlx5_10, mlx5_11, mlx5_8, mlx5_9" in measured.detail
    assert judge("gpu01", measured, GEN5).passed


def test_a_named_rail_with_no_pci_function_is_an_error_naming_it() -> None:
    with pytest.raises(MeasurementError, match="no PCI function lspci shows is the NIC of mlx5_12"):
        gpu.nic_pcie(_node(), ["mlx5_0/1", "mlx5_12/1"])
