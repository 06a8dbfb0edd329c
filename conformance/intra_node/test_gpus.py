"""Intra-node, per node and per GPU: the GPUs the node was sold with, and their PCIe links."""

import pytest

from pytest_fabric.judge.verdict import Measurement
from pytest_fabric.run.cluster import NodeHandle
from pytest_fabric.run.fixtures import GpuHandle, Judge

pytestmark = pytest.mark.intra_node


def test_gpu_count(node: NodeHandle, gpu_count: Measurement, judge: Judge) -> None:
    """nvidia-smi -q -x shows as many GPUs as the profile's gpu_count."""
    judge(gpu_count)


def test_gpu_model(gpu: GpuHandle, gpu_model: Measurement, judge: Judge) -> None:
    """Each GPU's product name contains the profile's gpu_model; a GPU the node lacks fails as missing."""
    judge(gpu_model)


def test_gpu_pcie(gpu: GpuHandle, gpu_pcie: Measurement, judge: Judge) -> None:
    """Each GPU's PCIe link read under load (nvbandwidth host_to_all_memcpy_ce running): generation and width."""
    judge(gpu_pcie)


def test_nic_pcie(node: NodeHandle, nic_pcie: Measurement, judge: Judge) -> None:
    """The slowest and narrowest Mellanox/NVIDIA NIC link (lspci LnkSta) meets the profile."""
    judge(nic_pcie)
