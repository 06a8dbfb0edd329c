"""Inter-node: NCCL all_reduce bus bandwidth between pairs, and as the job grows."""

import pytest

from pytest_fabric.judge.verdict import Measurement
from pytest_fabric.run.cluster import NodePair
from pytest_fabric.run.fixtures import Judge

pytestmark = pytest.mark.inter_node


def test_nccl_allreduce(node_pair: NodePair, nccl_allreduce: Measurement, judge: Judge) -> None:
    """all_reduce_perf across two nodes: bus bandwidth at the profile's message size."""
    judge(nccl_allreduce)


def test_scaling_efficiency(scaling_efficiency: Measurement, judge: Judge) -> None:
    """Bus bandwidth at 4, 8, ... all nodes stays close to the two-node figure."""
    judge(scaling_efficiency)
