"""Intra-node, GPU health: DCGM's diagnostics pass on every GPU (skipped, with the reason, where DCGM is not installed)."""

import pytest

pytestmark = pytest.mark.intra_node


def test_gpu_health(node, gpu_health, judge):
    """dcgmi diag -r LEVEL (the profile's gpu_health level): the message names each failed test per GPU."""
    judge(gpu_health, "intra_node.gpu_health")
