"""Inter-node: TCP between node pairs reaches the profile's floor."""

import pytest

pytestmark = pytest.mark.inter_node


def test_tcp_throughput(node_pair, tcp_throughput, judge):
    """iperf3 with the profile's streams and duration, client on the first node, server on the second."""
    judge(tcp_throughput, "inter_node.tcp_throughput")
