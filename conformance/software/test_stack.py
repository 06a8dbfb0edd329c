"""Software, the stack: at least the versions the profile pins on each node, and the same versions on every node."""

import pytest

from pytest_fabric.judge.verdict import Measurement
from pytest_fabric.run.cluster import NodeHandle
from pytest_fabric.run.fixtures import Judge

pytestmark = pytest.mark.software


def test_min_versions(node: NodeHandle, min_versions: Measurement, judge: Judge) -> None:
    """Driver, CUDA, NCCL, OFED, rdma-core, HCA firmware and kernel are at least the profile's min_versions."""
    judge(min_versions)


def test_software_consistency(software_consistency: Measurement, judge: Judge) -> None:
    """Once for the cluster: each component has one version on every node; the message names the odd nodes against the majority."""
    judge(software_consistency)
