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
    except ToolMissing:
        pytest.skip(f"dcgmi is not installed on {node.name}: DCGM diagnostics need datacenter-gpu-manager "
                    "(and its nv-hostengine running)")
