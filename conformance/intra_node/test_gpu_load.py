"""Intra-node, GPUs under load: tensor-core GEMM rate, HBM bandwidth and clock-event reasons per GPU,
each against the model's floor and the node's other GPUs (checks/gpu_load.py)."""

import pytest

from pytest_fabric.judge.verdict import Measurement
from pytest_fabric.run.cluster import NodeHandle
from pytest_fabric.run.fixtures import Judge

pytestmark = pytest.mark.intra_node


def test_gemm_throughput(node: NodeHandle, gemm_throughput: Measurement, judge: Judge) -> None:
    """dcgmproftester -t 1004 on every GPU at once: the message names each GPU below its floor or its siblings."""
    judge(gemm_throughput)


def test_clock_throttling(node: NodeHandle, clock_throttling: Measurement, judge: Judge) -> None:
    """nvidia-smi's clock-event reasons while the GEMM runs: HW slowdown, HW thermal, HW power brake and
    SW thermal fail the GPU; SW power cap is reported."""
    judge(clock_throttling)


def test_memory_bandwidth(node: NodeHandle, memory_bandwidth: Measurement, judge: Judge) -> None:
    """nvbandwidth -t device_local_copy: the message names each GPU below its floor or its siblings."""
    judge(memory_bandwidth)
