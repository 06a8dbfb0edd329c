"""Inter-node: TCP between node pairs reaches the profile's floor."""

import pytest

from pytest_fabric.judge.verdict import Measurement
from pytest_fabric.run.cluster import NodePair
from pytest_fabric.run.fixtures import Judge

pytestmark = pytest.mark.inter_node


def test_tcp_throughput(node_pair: NodePair, tcp_throughput: Measurement, judge: Judge) -> None:
    """iperf3 with the profile's streams and duration, client on the first node, server on the second."""
    judge(tcp_throughput)
