"""GPU health per node: DCGM's diagnostic at the profile's level and the GPUs' memory state
(nvidia-smi's ECC errors, remapped rows, retired pages), in a wave over every node.

A node without dcgmi is an error naming the package (DCGM is not part of every GPU node's
install), as is everything else that stops the diagnostic."""

from __future__ import annotations

import dataclasses

import pytest

from pytest_fabric.checks import base as checks
from pytest_fabric.judge.verdict import Measurement
from pytest_fabric.measurements.intra_node import node_gpus
from pytest_fabric.probes import dcgm
from pytest_fabric.run.cluster import NodeHandle
from pytest_fabric.run.fixtures import SpecLookup
from pytest_fabric.run.waves import wave
from pytest_fabric.transport.base import ToolMissing, TransportError


@pytest.fixture
@wave("node")
def gpu_health(request: pytest.FixtureRequest, node: NodeHandle, spec: SpecLookup) -> Measurement:
    """``dcgmi diag -r LEVEL`` (``gpu_health: {level: 1}``) passes on every GPU of the node, and
    nvidia-smi shows no GPU memory fault (uncorrectable volatile ECC errors, a pending or failed
    row remap, a pending page retirement)."""
    settings = spec(checks.GPU_HEALTH)
    try:
        measured = dcgm.gpu_health(node, settings.level)
    except ToolMissing as exc:
        # An error of the node, never a skip: a missing tool must not turn a set check into a pass.
        raise ToolMissing(node.name, "dcgmi", command=exc.command,
                          package="datacenter-gpu-manager (and start nv-hostengine)") from None
    try:
        inv = node_gpus(request, node)  # the node's one GPU inventory, shared with the intra-node checks
    except TransportError as exc:
        # gpu_count and the other inventory checks report why; the diagnostic still judges the node.
        return dataclasses.replace(measured, detail=f"{measured.detail}; GPU memory state not read: {exc}")
    return dcgm.with_memory_faults(measured, inv.gpus, inv.command, inv.evidence)
