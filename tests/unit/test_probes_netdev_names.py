"""A node written by a name this controller cannot resolve (Slurm's node names often are) says so,
instead of 'no interface holds the data address' with a fix to edit the inventory (issue 33)."""

from __future__ import annotations

import pytest

from pytest_fabric.config.inventory import Node
from pytest_fabric.probes.base import MeasurementError
from pytest_fabric.probes.netdev import data_interface
from pytest_fabric.run.cluster import NodeHandle
from pytest_fabric.transport.mock import CannedCommand, MockTransport
from pytest_fabric.transport.pool import ConnectionPool

_ADDR = "2: eth0    inet 10.9.0.12/16 brd 10.9.255.255 scope global eth0\\       valid_lft forever preferred_lft forever\n"


def _node(host: str) -> NodeHandle:
    transport = MockTransport("gpu02", {r"^ip -o addr show$": CannedCommand(stdout=_ADDR)})
    return NodeHandle(Node(name="gpu02", host=host, transport="slurm"), ConnectionPool(lambda _n: transport))


def test_a_name_that_does_not_resolve_on_the_controller_says_so() -> None:
    with pytest.raises(MeasurementError) as excinfo:
        data_interface(_node("gpu02.invalid"))
    text = str(excinfo.value)
    assert "the node name gpu02.invalid does not resolve on this controller" in text
    assert "data_address" in text and "python -m pytest_fabric.inventories" in text
    assert "no interface holds" not in text


def test_an_address_the_node_holds_is_its_interface() -> None:
    assert data_interface(_node("10.9.0.12"))[0] == "eth0"
