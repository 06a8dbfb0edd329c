"""Intra-node measurements: GPUs, their links (NVLink/NVSwitch/PCIe), and NCCL inside one node.

Per node: ``gpu_count``, ``gpu_interconnect``, ``nic_pcie``, ``nvlink_bandwidth``,
``host_to_device_bandwidth``, ``device_to_host_bandwidth``, ``node_nccl_allreduce``.
Per GPU (``node01:gpu3``, as many as the profile's ``gpu_count``): ``gpu_model``,
``gpu_pcie``; a GPU the node does not show fails as missing.

The GPU inventory (``nvidia-smi -q -x``) is read once per node and run and
shared by the count, model and PCIe checks, and by ``gpu_interconnect`` where the
profile expects NVLink (the GPUs' NVLink fabric state): it is one command, and every
GPU subject of a node must be judged on the same reading.  So are the PCIe links
sampled under load for ``gpu_pcie`` (one copy to every GPU at once per node).

Every check runs in a wave: on all nodes at once. The GPUs of one node take turns
(one node's GPUs are one resource), so the first reads the node and the others
find its reading.
"""

from __future__ import annotations

import dataclasses

import pytest

from pytest_fabric.checks import base as checks
from pytest_fabric.judge.verdict import Measurement
from pytest_fabric.probes import gpu as gpu_probe
from pytest_fabric.probes.base import MeasurementError
from pytest_fabric.run.batches import Share
from pytest_fabric.run.cluster import NodeHandle
from pytest_fabric.run.fixtures import GpuHandle, SpecLookup
from pytest_fabric.run.state import FabricState, get_state
from pytest_fabric.run.waves import wave


def _same_node(state: FabricState, gpu: GpuHandle) -> Share:
    return Share(f"{gpu.node.name}'s GPUs", 1)


def _state(request: pytest.FixtureRequest) -> FabricState:
    state = get_state(request.config)
    assert state is not None
    return state


def node_gpus(request: pytest.FixtureRequest, node: NodeHandle) -> gpu_probe.GpuInventory:
    """The node's GPU inventory, read once per run (an error is kept: the node's other checks report it)."""
    return _state(request).once.get("gpu inventory", node.name, lambda: gpu_probe.inventory(node))


def node_links_under_load(request: pytest.FixtureRequest, node: NodeHandle) -> gpu_probe.LinksUnderLoad:
    """The node's GPU links sampled under load, once per run: every GPU subject is judged on one load.

    A failure is kept too, so the node's other GPUs report the same cause at
    once instead of each starting the copy (and its sampling window) again.
    """
    return _state(request).once.get(
        "gpu links under load", node.name, lambda: gpu_probe.links_under_load(node, node_gpus(request, node))
    )


def _expected_gpus(state: FabricState, node: NodeHandle) -> int:
    """GPUs the profile expects per node (0 when it sets no gpu_count)."""
    spec = state.profile.spec("intra_node", "gpu_count")
    value = getattr(spec, "equal", None) or getattr(spec, "min", None) if spec is not None else None
    return int(value.value) if value is not None else 0


@pytest.fixture
@wave("node")
def gpu_count(request: pytest.FixtureRequest, node: NodeHandle, spec: SpecLookup) -> Measurement:
    spec(checks.GPU_COUNT)
    return gpu_probe.gpu_count(node_gpus(request, node))


@pytest.fixture
@wave("gpu", shares=_same_node)
def gpu_model(request: pytest.FixtureRequest, gpu: GpuHandle, spec: SpecLookup) -> Measurement:
    spec(checks.GPU_MODEL)
    return gpu_probe.gpu_model(node_gpus(request, gpu.node), gpu.index)


@pytest.fixture
@wave("gpu", shares=_same_node)
def gpu_pcie(request: pytest.FixtureRequest, gpu: GpuHandle, spec: SpecLookup) -> Measurement:
    spec(checks.GPU_PCIE)
    inv = node_gpus(request, gpu.node)
    absent = gpu_probe.gpu_absent(inv, gpu.index)
    if absent is not None:
        return absent  # no load needed to find a GPU missing
    return gpu_probe.gpu_pcie(inv, gpu.index, node_links_under_load(request, gpu.node))


@pytest.fixture
@wave("node")
def gpu_interconnect(request: pytest.FixtureRequest, node: NodeHandle, spec: SpecLookup) -> Measurement:
    expected = spec(checks.GPU_INTERCONNECT)
    measured = gpu_probe.gpu_interconnect(node)
    if "nvlink" not in expected.value.lower():
        return measured
    # NVLink expected: a GPU the NVSwitch fabric has not registered fails it by name.
    try:
        inv = node_gpus(request, node)
    except MeasurementError as exc:
        # The inventory's own checks report why; the topology alone still judges the links.
        return dataclasses.replace(measured, detail=f"{measured.detail}; NVLink fabric state not read: {exc}")
    return gpu_probe.with_fabric_state(measured, inv)


@pytest.fixture
@wave("node")
def nic_pcie(request: pytest.FixtureRequest, node: NodeHandle, spec: SpecLookup) -> Measurement:
    """The PCIe link of the NICs of the rails the inventory (``rdma_ports``) or the profile (``ports.names``)
    names; of every Mellanox/NVIDIA function where none are named."""
    spec(checks.NIC_PCIE)
    ports_spec = _state(request).profile.spec_of(checks.PORTS)
    named = tuple(node.spec.rdma_ports) or (tuple(ports_spec.names) if ports_spec is not None else ())
    return gpu_probe.nic_pcie(node, named)


@pytest.fixture
@wave("node")
def nvlink_bandwidth(node: NodeHandle, spec: SpecLookup) -> Measurement:
    spec(checks.NVLINK_BANDWIDTH)
    return gpu_probe.nvlink_bandwidth(node)


@pytest.fixture
@wave("node")
def host_to_device_bandwidth(node: NodeHandle, spec: SpecLookup) -> Measurement:
    spec(checks.HOST_TO_DEVICE_BANDWIDTH)
    return gpu_probe.host_bandwidth(node, gpu_probe.H2D_TESTCASE)


@pytest.fixture
@wave("node")
def device_to_host_bandwidth(node: NodeHandle, spec: SpecLookup) -> Measurement:
    spec(checks.DEVICE_TO_HOST_BANDWIDTH)
    return gpu_probe.host_bandwidth(node, gpu_probe.D2H_TESTCASE)


@pytest.fixture
@wave("node")
def node_nccl_allreduce(request: pytest.FixtureRequest, node: NodeHandle, spec: SpecLookup) -> Measurement:
    """Single-node all_reduce (the inter-node layer's ``nccl_allreduce`` fixture is the multi-node one)."""
    settings = spec(checks.NODE_NCCL_ALLREDUCE)
    inv = node_gpus(request, node)
    expected = _expected_gpus(_state(request), node)
    if expected and len(inv.gpus) < expected:
        # A bus bandwidth over fewer GPUs is not comparable with the profile's
        # figure, and all_reduce_perf -g N would only die with "invalid device ordinal".
        return Measurement.absent(
            f"{node.name} shows {len(inv.gpus)} GPU(s) ({inv.command}); the all_reduce needs the profile's {expected}",
            inv.evidence,
        )
    return gpu_probe.node_allreduce(node, size_bytes=int(settings.size.to("B")), gpus=expected or len(inv.gpus))
