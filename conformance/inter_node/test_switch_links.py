"""Inter-node, the switches: every link of the InfiniBand subnet, switch-to-switch ones included, read once from one node."""

import pytest

from pytest_fabric.judge.verdict import Measurement
from pytest_fabric.run.fixtures import Judge

pytestmark = pytest.mark.inter_node


def test_switch_links(switch_links: Measurement, judge: Judge) -> None:
    """iblinkinfo: each switch port with a peer has the profile's width and rate and no "Could be" hint; each bad link named by both ends."""
    judge(switch_links)
