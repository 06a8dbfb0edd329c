"""Intra-node, GPU-NIC affinity from nvidia-smi topo -m: each GPU near its NIC, the same rails on every node."""

import pytest

from pytest_fabric.judge.verdict import Measurement
from pytest_fabric.run.cluster import NodeHandle
from pytest_fabric.run.fixtures import Judge

pytestmark = pytest.mark.intra_node


def test_gpu_nic_affinity(node: NodeHandle, gpu_nic_affinity: Measurement, judge: Judge) -> None:
    """Each GPU's nearest NIC shares its PCIe switch (PIX or PXB); the message names a GPU that reaches it only over NODE or SYS."""
    judge(gpu_nic_affinity)


def test_gpu_rails(gpu_rails: Measurement, judge: Judge) -> None:
    """Once for the cluster: GPU N has the same nearest NIC on every node (rails), the odd nodes named against the majority."""
    judge(gpu_rails)
