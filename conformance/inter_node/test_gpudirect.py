"""Inter-node, GPUDirect RDMA: GPU memory to GPU memory between node pairs, each GPU over its nearest NIC."""

import pytest

from pytest_fabric.judge.verdict import Measurement
from pytest_fabric.run.cluster import NodePair
from pytest_fabric.run.fixtures import Judge

pytestmark = pytest.mark.inter_node


def test_gpudirect_bandwidth(node_pair: NodePair, gpudirect_bandwidth: Measurement, judge: Judge) -> None:
    """ib_write_bw --use_cuda=N per GPU through its nearest NIC: the worst GPU meets the floor; a GPU whose memory cannot be registered errors."""
    judge(gpudirect_bandwidth)
