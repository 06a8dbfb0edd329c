"""Inter-node, per node pair: RDMA bandwidth and latency, rail by rail and all rails at once."""

import pytest

from pytest_fabric.judge.verdict import Measurement
from pytest_fabric.run.cluster import NodePair
from pytest_fabric.run.fixtures import Judge

pytestmark = pytest.mark.inter_node


def test_rdma_bandwidth(node_pair: NodePair, rdma_bandwidth: Measurement, judge: Judge) -> None:
    """ib_write_bw for the profile's duration on every rail, rails paired by identity, median of the
    profile's repeats; the worst rail is judged, and a rail Down or missing on one side fails by name."""
    judge(rdma_bandwidth)


def test_rdma_latency(node_pair: NodePair, rdma_latency: Measurement, judge: Judge) -> None:
    """ib_write_lat on every rail: typical latency against ``max``, the 99% percentile against ``p99``."""
    judge(rdma_latency)


def test_aggregate_rdma_bandwidth(node_pair: NodePair, aggregate_rdma_bandwidth: Measurement, judge: Judge) -> None:
    """All ports of the pair at once move (almost) as much as each port alone, summed."""
    judge(aggregate_rdma_bandwidth)
