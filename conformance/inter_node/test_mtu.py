"""Inter-node: the data interface's MTU is what the profile expects (jumbo frames for RoCE)."""

import pytest

from pytest_fabric.judge.verdict import Measurement
from pytest_fabric.run.cluster import NodeHandle
from pytest_fabric.run.fixtures import Judge

pytestmark = pytest.mark.inter_node


def test_mtu(node: NodeHandle, mtu: Measurement, judge: Judge) -> None:
    judge(mtu)
