"""GPU health per node: DCGM's diagnostic at the profile's level, in a wave over every node.

A node without dcgmi is skipped with the reason (DCGM is not part of every GPU node's
install); everything else that stops the diagnostic is an error."""

from __future__ import annotations

import pytest

from .. import checks
from ..cluster import NodeHandle
from ..fixtures import SpecLookup
from ..probes import dcgm
from ..transport.base import ToolMissing
from ..verdict import Measurement
from ..waves import wave


@pytest.fixture
@wave("node")
def gpu_health(node: NodeHandle, spec: SpecLookup) -> Measurement:
    """``dcgmi diag -r LEVEL`` (``gpu_health: {level: 1}``) passes on every GPU of the node."""
    settings = spec(checks.GPU_HEALTH)
    try:
        return dcgm.gpu_health(node, settings.level)
    except ToolMissing as exc:
        # An error of the node, never a skip: a missing tool must not turn a set check into a pass.
        raise ToolMissing(node.name, "dcgmi", command=exc.command,
                          package="datacenter-gpu-manager (and start nv-hostengine)") from None
