"""Intra-node, per node: how GPUs talk to each other and to host memory, and single-node NCCL."""

import pytest

pytestmark = pytest.mark.intra_node


def test_gpu_interconnect(node, gpu_interconnect, judge):
    """Every GPU pair is NV# in nvidia-smi topo -m (profile: nvlink); the message names PCIe-only pairs."""
    judge(gpu_interconnect, "intra_node.gpu_interconnect")


def test_nvlink_bandwidth(node, nvlink_bandwidth, judge):
    """nvbandwidth device_to_device_memcpy_read_ce: the slowest GPU pair meets the floor; inactive NVLinks fail."""
    judge(nvlink_bandwidth, "intra_node.nvlink_bandwidth")


def test_host_to_device_bandwidth(node, host_to_device_bandwidth, judge):
    """nvbandwidth host_to_device_memcpy_ce: the slowest GPU meets the floor."""
    judge(host_to_device_bandwidth, "intra_node.host_to_device_bandwidth")


def test_device_to_host_bandwidth(node, device_to_host_bandwidth, judge):
    """nvbandwidth device_to_host_memcpy_ce: the slowest GPU meets the floor."""
    judge(device_to_host_bandwidth, "intra_node.device_to_host_bandwidth")


def test_node_nccl_allreduce(node, node_nccl_allreduce, judge):
    """all_reduce_perf -g N on one node: bus bandwidth at the profile's size (not the sweep average)."""
    judge(node_nccl_allreduce, "intra_node.nccl_allreduce")
