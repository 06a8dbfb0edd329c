"""GPU-NIC affinity: per node, each GPU's nearest NIC on its own PCIe switch; for the cluster,
the same GPU-to-NIC rails on every node. Both read one ``nvidia-smi topo -m`` per node, once
per run (see :mod:`~pytest_fabric.probes.affinity`)."""

from __future__ import annotations

import pytest

from pytest_fabric.checks import base as checks
from pytest_fabric.config.hostlist import fold
from pytest_fabric.judge.verdict import Measurement
from pytest_fabric.parsers.nvidia_smi_topo import TopologyMatrix
from pytest_fabric.probes import affinity
from pytest_fabric.probes import gpu as gpu_probe
from pytest_fabric.probes.base import MeasurementError
from pytest_fabric.run.cluster import Cluster, NodeHandle
from pytest_fabric.run.fixtures import SpecLookup
from pytest_fabric.run.state import FabricState, get_state
from pytest_fabric.run.waves import wave
from pytest_fabric.transport.base import TransportError
from pytest_fabric.transport.results import CommandResult


def _state(request: pytest.FixtureRequest) -> FabricState:
    state = get_state(request.config)
    assert state is not None  # `spec` skips first when the plugin is not configured
    return state


def node_topology(request: pytest.FixtureRequest, node: NodeHandle) -> tuple[TopologyMatrix, CommandResult]:
    """The node's ``nvidia-smi topo -m``, read once per run (an error is kept for the node's other checks)."""
    return _state(request).once.get("topology", node.name, lambda: gpu_probe.topology(node))


@pytest.fixture
@wave("node")
def gpu_nic_affinity(request: pytest.FixtureRequest, node: NodeHandle, spec: SpecLookup) -> Measurement:
    """Each GPU's nearest NIC is over a path in the profile's ``paths`` (PIX or PXB)."""
    settings = spec(checks.GPU_NIC_AFFINITY)
    matrix, result = node_topology(request, node)
    if not matrix.nics:
        return Measurement.absent(f"nvidia-smi topo -m on {node.name} shows no NIC, so no GPU has a nearest NIC",
                                  (result,))
    found = affinity.rails(matrix)
    extra = {"rails": {r.gpu: {"nics": list(r.nics), "path": r.path} for r in found}}
    far = affinity.far_gpus(found, settings.paths)
    if far:
        return Measurement(value="far NIC", evidence=(result,), extra=extra,
                           detail="; ".join(far) + f" (the profile asks for {' or '.join(settings.paths)}: the same PCIe switch)")
    shown = ", ".join(f"{r.gpu} {r.nic_text} {r.path}" for r in found)
    return Measurement(value="ok", detail=shown, evidence=(result,), extra=extra)


@pytest.fixture
def gpu_rails(request: pytest.FixtureRequest, cluster: Cluster, spec: SpecLookup) -> Measurement:
    """Once for the cluster: each GPU index has the same nearest NIC on every node."""
    spec(checks.GPU_NIC_AFFINITY)
    state = _state(request)

    def one(node: NodeHandle) -> list[affinity.GpuRail] | TransportError:
        try:
            return affinity.rails(node_topology(request, node)[0])
        except TransportError as exc:
            return exc

    got = dict(zip([n.name for n in cluster.nodes], state.batches.fan_out(cluster.nodes, one)))
    by_node = {n: r for n, r in got.items() if not isinstance(r, TransportError)}
    errors = {n: r for n, r in got.items() if isinstance(r, TransportError)}
    findings = affinity.rail_differences(by_node)
    if errors and not findings:
        raise MeasurementError(fold(errors), f"nvidia-smi topo -m could not be read on {fold(errors)}; the other "
                               f"{len(by_node)} node(s) agree, but a node not read cannot count as the same",
                               command="nvidia-smi topo -m", fix="make those nodes readable and run again")
    extra = {"rails": {n: {r.gpu: r.nic_text for r in found} for n, found in sorted(by_node.items())}}
    if findings:
        unread = f" (not read: {fold(errors)})" if errors else ""
        return Measurement(value="rails differ", detail="; ".join(findings) + unread, extra=extra)
    example = next(iter(by_node.values()), [])
    return Measurement(value="ok", extra=extra, detail=f"all {len(by_node)} nodes: " +
                       ", ".join(f"{r.gpu} -> {r.nic_text}" for r in example))
