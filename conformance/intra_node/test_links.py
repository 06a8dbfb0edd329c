"""Intra-node, per node: how GPUs talk to each other and to host memory, and single-node NCCL."""

import pytest

from pytest_fabric.judge.verdict import Measurement
from pytest_fabric.run.cluster import NodeHandle
from pytest_fabric.run.fixtures import Judge

pytestmark = pytest.mark.intra_node


def test_gpu_interconnect(node: NodeHandle, gpu_interconnect: Measurement, judge: Judge) -> None:
    """Every GPU pair is NV# in nvidia-smi topo -m (profile: nvlink); the message names PCIe-only pairs."""
    judge(gpu_interconnect)


def test_nvlink_bandwidth(node: NodeHandle, nvlink_bandwidth: Measurement, judge: Judge) -> None:
    """nvbandwidth device_to_device_memcpy_read_ce: the slowest GPU pair meets the floor; inactive NVLinks fail."""
    judge(nvlink_bandwidth)


def test_host_to_device_bandwidth(node: NodeHandle, host_to_device_bandwidth: Measurement, judge: Judge) -> None:
    """nvbandwidth host_to_device_memcpy_ce: the slowest GPU meets the floor."""
    judge(host_to_device_bandwidth)


def test_device_to_host_bandwidth(node: NodeHandle, device_to_host_bandwidth: Measurement, judge: Judge) -> None:
    """nvbandwidth device_to_host_memcpy_ce: the slowest GPU meets the floor."""
    judge(device_to_host_bandwidth)


def test_node_nccl_allreduce(node: NodeHandle, node_nccl_allreduce: Measurement, judge: Judge) -> None:
    """all_reduce_perf -g N on one node: bus bandwidth at the profile's size (not the sweep average)."""
    judge(node_nccl_allreduce)
