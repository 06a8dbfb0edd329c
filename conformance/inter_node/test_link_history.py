"""Inter-node, what each RDMA port went through before the run: link-downs and symbol errors."""

import pytest

from pytest_fabric.judge.verdict import Measurement
from pytest_fabric.run.cluster import NodeHandle
from pytest_fabric.run.fixtures import Judge

pytestmark = pytest.mark.inter_node


def test_link_history(node: NodeHandle, link_history: Measurement, judge: Judge) -> None:
    """Before any traffic: each port has at most inter_node.link_history.link_down_events_max link-down
    events in the kernel log within its window (1 in 6 h, azurehpc-health-checks' flap rule), a
    LinkDownedCounter of at most link_downed_max (1), and symbol errors below ber_max (1e-12,
    ibdiagnet's threshold) over the bits it could carry since boot. A failure names the port."""
    judge(link_history)
