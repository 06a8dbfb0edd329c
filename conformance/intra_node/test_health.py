"""Intra-node, GPU health: DCGM's diagnostics pass on every GPU (skipped, with the reason, where DCGM is not installed)."""

import pytest

from pytest_fabric.judge.verdict import Measurement
from pytest_fabric.run.cluster import NodeHandle
from pytest_fabric.run.fixtures import Judge

pytestmark = pytest.mark.intra_node


def test_gpu_health(node: NodeHandle, gpu_health: Measurement, judge: Judge) -> None:
    """dcgmi diag -r LEVEL (the profile's gpu_health level): the message names each failed test per GPU."""
    judge(gpu_health)
