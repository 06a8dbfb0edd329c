"""Inter-node: the data interface's MTU is what the profile expects (jumbo frames for RoCE)."""

import pytest

pytestmark = pytest.mark.inter_node


def test_mtu(node, mtu, judge):
    judge(mtu, "inter_node.mtu")
