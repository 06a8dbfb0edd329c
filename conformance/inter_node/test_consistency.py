"""Inter-node, across the fabric: no pair lags its peers, and every bad pair is blamed on a node, a link or the fabric."""

import pytest

from pytest_fabric.judge.verdict import Measurement
from pytest_fabric.run.cluster import NodeHandle, NodePair
from pytest_fabric.run.fixtures import Judge

pytestmark = pytest.mark.inter_node


def test_rdma_bandwidth_outlier(node_pair: NodePair, rdma_bandwidth_outlier: Measurement, judge: Judge) -> None:
    """A pair far below the cluster median fails even when it clears the floor (one bad cable)."""
    judge(rdma_bandwidth_outlier)


def test_tcp_throughput_outlier(node_pair: NodePair, tcp_throughput_outlier: Measurement, judge: Judge) -> None:
    judge(tcp_throughput_outlier)


def test_rdma_latency_outlier(node_pair: NodePair, rdma_latency_outlier: Measurement, judge: Judge) -> None:
    """Latency that differs between pairs is a finding, even under the ceiling."""
    judge(rdma_latency_outlier)


def test_oversubscription(oversubscription: Measurement, judge: Judge) -> None:
    """Pairs across leaves all at once move as much as one at a time: the fabric is non-blocking."""
    judge(oversubscription)


def test_attribution(node: NodeHandle, attribution: Measurement, judge: Judge) -> None:
    """Every pair check's figures against a baseline without the node: a node fault, unstable, a link fault or cannot tell."""
    judge(attribution)


def test_fabric_attribution(fabric_attribution: Measurement, judge: Judge) -> None:
    """Once for the whole fabric: shortfalls with no node pattern, pairs short only under load, links, what cannot be told."""
    judge(fabric_attribution)
