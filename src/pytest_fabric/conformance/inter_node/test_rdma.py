"""Inter-node, per node pair: RDMA bandwidth and latency, rail by rail and all rails at once."""

import pytest

pytestmark = pytest.mark.inter_node


def test_rdma_bandwidth(node_pair, rdma_bandwidth, judge):
    """ib_write_bw, median of the profile's repeats, on every rail; the worst rail is judged."""
    judge(rdma_bandwidth, "inter_node.rdma_bandwidth")


def test_rdma_latency(node_pair, rdma_latency, judge):
    """ib_write_lat: typical latency (and p99 where the profile sets it)."""
    judge(rdma_latency, "inter_node.rdma_latency")


def test_aggregate_rdma_bandwidth(node_pair, aggregate_rdma_bandwidth, judge):
    """All ports of the pair at once move (almost) as much as each port alone, summed."""
    judge(aggregate_rdma_bandwidth, "inter_node.aggregate_rdma_bandwidth")
