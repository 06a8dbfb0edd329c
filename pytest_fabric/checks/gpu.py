"""GPUs inside one node (``intra_node.*``): the GPUs, their links (NVLink/NVSwitch/PCIe), NCCL inside
one node, and DCGM's health diagnostic: settings, declarations and fixtures.

Per node: ``gpu_interconnect``, ``nic_pcie``, ``nvlink_bandwidth``, ``host_to_device_bandwidth``,
``device_to_host_bandwidth``, ``node_nccl_allreduce``, ``gpu_health``.  Per GPU (``node01:gpu3``,
as many as the profile's ``gpu_count``): ``gpu_model``, ``gpu_pcie``; a GPU the node does not show
fails as missing.  (``gpu_count`` is the profile's statement of the hardware: the plan, the Slurm
allocation and NCCL's ranks read it through the run's registry, ``CheckRegistry.statement``.)

The GPU inventory (``nvidia-smi -q -x``) is read once per node and run and
shared by the count, model and PCIe checks, by ``gpu_interconnect`` where the
profile expects NVLink (the GPUs' NVLink fabric state), and by ``gpu_health`` (the GPUs'
memory state): it is one command, and every GPU subject of a node must be judged on the
same reading.  So are the PCIe links sampled under load for ``gpu_pcie`` (one copy to every
GPU at once per node).

Every check runs in a wave: on all nodes at once. The GPUs of one node take turns
(one node's GPUs are one resource), so the first reads the node and the others
find its reading.  The family registers its checks through ``pytest_fabric_checks``, as an
extension does; its probes are :mod:`pytest_fabric.probes.gpu` and :mod:`pytest_fabric.probes.dcgm`.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Literal

import pytest
from pydantic import Field, model_validator

from pytest_fabric.checks.base import Check
from pytest_fabric.config.hostlist import fold
from pytest_fabric.config.profile import (
    BandwidthFloor,
    CheckSpec,
    Count,
    Finding,
    NcclBandwidth,
    Ports,
    Text,
)
from pytest_fabric.config.units import Quantity, parse_quantity
from pytest_fabric.judge.verdict import Measurement, Op
from pytest_fabric.parsers.nvidia_smi_topo import TopologyMatrix
from pytest_fabric.probes import affinity, dcgm
from pytest_fabric.probes import gpu as gpu_probe
from pytest_fabric.probes.base import MeasurementError
from pytest_fabric.run.batches import Share
from pytest_fabric.run.cluster import Cluster, NodeHandle
from pytest_fabric.run.fixtures import GpuHandle, SpecLookup
from pytest_fabric.run.state import FabricState, get_state
from pytest_fabric.run.waves import wave
from pytest_fabric.transport.base import ToolMissing, TransportError
from pytest_fabric.transport.results import CommandResult

__all__ = [
    "DCGM_LEVEL_S",
    "DEVICE_TO_HOST_BANDWIDTH",
    "GPU_COUNT",
    "GPU_HEALTH",
    "GPU_INTERCONNECT",
    "GPU_MODEL",
    "GPU_NIC_AFFINITY",
    "GPU_RAILS",
    "GPU_PCIE",
    "HOST_TO_DEVICE_BANDWIDTH",
    "NIC_PCIE",
    "NODE_NCCL_ALLREDUCE",
    "NVLINK_BANDWIDTH",
    "GpuHealth",
    "GpuNicAffinity",
    "PcieLink",
    "node_gpus",
    "node_links_under_load",
    "node_topology",
    "pytest_fabric_checks",
]

#: ``dcgmi diag -r LEVEL`` end to end, by level: NVIDIA's dcgmi diag reference ("1: quick deployment
#: checks, normally lasting seconds; 2: medium validation, approximately two minutes; 3: long hardware
#: diagnostics, approximately 15 minutes; 4: extended, longer-running", taken as an hour), each with
#: the 2 minutes a level-1 run takes here end to end (DCGM's start, the plugins' setup, the table)
DCGM_LEVEL_S = {1: 120.0, 2: 240.0, 3: 1020.0, 4: 3720.0}


class PcieLink(CheckSpec):
    """A PCIe link's floor: at least ``generation`` and ``width`` lanes (``gpu_pcie``, ``nic_pcie``)."""

    generation: int = Field(ge=1, le=7)
    width: int = Field(ge=1, le=32)

    @model_validator(mode="after")
    def _dimensions(self) -> Any:
        return self

    def bounds(self) -> list[tuple[str, Op, Quantity | str | int | bool]]:
        return [
            ("generation", Op.MIN, parse_quantity(self.generation)),
            ("width", Op.MIN, parse_quantity(self.width)),
        ]


class GpuHealth(Finding):
    """``dcgmi diag -r LEVEL`` (1 quick, 2 medium, 3 long, 4 extended) passes on every GPU."""

    OK = "pass"
    SCALAR_FIELD = "level"
    level: int = Field(default=1, ge=1, le=4)

    def seconds(self) -> float | None:
        """DCGM's level sets how long it runs, not a duration (the plan reads this)."""
        return DCGM_LEVEL_S.get(self.level, DCGM_LEVEL_S[1])


PciePath = Literal["PIX", "PXB", "PHB", "NODE", "SYS"]
_NEAR_PATHS: tuple[PciePath, ...] = ("PIX", "PXB")  # the GPU and its NIC under one PCIe switch


class GpuNicAffinity(Finding):
    """Each GPU's nearest NIC over a path in ``paths`` (topo -m); the GPU-to-NIC rails the same on every node."""

    paths: list[PciePath] = Field(default_factory=lambda: list(_NEAR_PATHS))


#: the profile's word on how many GPUs a node has: NCCL's ranks, the plan and the Slurm allocation read
#: it (``states="gpus"``, through the run's registry), besides the check that counts them
GPU_COUNT = Check("gpu_count", "intra_node", Count, "node", "wave", tools=("nvidia-smi",), states="gpus")
GPU_MODEL = Check("gpu_model", "intra_node", Text, "gpu", "wave", tools=("nvidia-smi",))
GPU_PCIE = Check("gpu_pcie", "intra_node", PcieLink, "gpu", "wave", tools=("nvidia-smi", "nvbandwidth"),
                 typical_s=10.0)  # read under nvbandwidth load
NIC_PCIE = Check("nic_pcie", "intra_node", PcieLink, "node", "wave", tools=("lspci",))
GPU_INTERCONNECT = Check("gpu_interconnect", "intra_node", Text, "node", "wave", tools=("nvidia-smi",))
NVLINK_BANDWIDTH = Check("nvlink_bandwidth", "intra_node", BandwidthFloor, "node", "wave",
                         tools=("nvidia-smi", "nvbandwidth"), typical_s=30.0, ceiling="nvlink")  # every GPU pair
HOST_TO_DEVICE_BANDWIDTH = Check("host_to_device_bandwidth", "intra_node", BandwidthFloor, "node", "wave",
                                 tools=("nvbandwidth",), typical_s=10.0, ceiling="gpu_pcie")
DEVICE_TO_HOST_BANDWIDTH = Check("device_to_host_bandwidth", "intra_node", BandwidthFloor, "node", "wave",
                                 tools=("nvbandwidth",), typical_s=10.0, ceiling="gpu_pcie")
#: all_reduce_perf's sweep on a node's GPUs; judged by ``intra_node.nccl_allreduce``
NODE_NCCL_ALLREDUCE = Check("node_nccl_allreduce", "intra_node", NcclBandwidth, "node", "wave",
                            key="nccl_allreduce", tools=("nvidia-smi", "all_reduce_perf"), typical_s=45.0,
                            allreduce="node")
GPU_NIC_AFFINITY = Check("gpu_nic_affinity", "intra_node", GpuNicAffinity, "node", "wave", tools=("nvidia-smi",))
#: once for the cluster, judged by the same key: the same rails on every node
GPU_RAILS = Check("gpu_rails", "intra_node", GpuNicAffinity, "cluster", "cluster", key="gpu_nic_affinity")
#: dcgmi diag -r 1 (level 2 and above take minutes more: GpuHealth.seconds)
GPU_HEALTH = Check("gpu_health", "intra_node", GpuHealth, "node", "wave", tools=("dcgmi",), typical_s=120.0)


def pytest_fabric_checks(config: pytest.Config) -> list[Check[Any]]:
    """pytest-fabric registers this family the way an extension registers its checks."""
    return [GPU_COUNT, GPU_MODEL, GPU_PCIE, NIC_PCIE, GPU_INTERCONNECT, NVLINK_BANDWIDTH, HOST_TO_DEVICE_BANDWIDTH,
            DEVICE_TO_HOST_BANDWIDTH, NODE_NCCL_ALLREDUCE, GPU_NIC_AFFINITY, GPU_RAILS, GPU_HEALTH]


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
    spec(GPU_COUNT)
    return gpu_probe.gpu_count(node_gpus(request, node))


@pytest.fixture
@wave("gpu", shares=_same_node)
def gpu_model(request: pytest.FixtureRequest, gpu: GpuHandle, spec: SpecLookup) -> Measurement:
    spec(GPU_MODEL)
    return gpu_probe.gpu_model(node_gpus(request, gpu.node), gpu.index)


@pytest.fixture
@wave("gpu", shares=_same_node)
def gpu_pcie(request: pytest.FixtureRequest, gpu: GpuHandle, spec: SpecLookup) -> Measurement:
    spec(GPU_PCIE)
    inv = node_gpus(request, gpu.node)
    absent = gpu_probe.gpu_absent(inv, gpu.index)
    if absent is not None:
        return absent  # no load needed to find a GPU missing
    return gpu_probe.gpu_pcie(inv, gpu.index, node_links_under_load(request, gpu.node))


@pytest.fixture
@wave("node")
def gpu_interconnect(request: pytest.FixtureRequest, node: NodeHandle, spec: SpecLookup) -> Measurement:
    expected = spec(GPU_INTERCONNECT)
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
    spec(NIC_PCIE)
    state = _state(request)
    ports_spec = state.checks.statement(state.profile, "rails", Ports)
    named = tuple(node.spec.rdma_ports) or (tuple(ports_spec.names) if ports_spec is not None else ())
    return gpu_probe.nic_pcie(node, named)


@pytest.fixture
@wave("node")
def nvlink_bandwidth(node: NodeHandle, spec: SpecLookup) -> Measurement:
    spec(NVLINK_BANDWIDTH)
    return gpu_probe.nvlink_bandwidth(node)


@pytest.fixture
@wave("node")
def host_to_device_bandwidth(node: NodeHandle, spec: SpecLookup) -> Measurement:
    spec(HOST_TO_DEVICE_BANDWIDTH)
    return gpu_probe.host_bandwidth(node, gpu_probe.H2D_TESTCASE)


@pytest.fixture
@wave("node")
def device_to_host_bandwidth(node: NodeHandle, spec: SpecLookup) -> Measurement:
    spec(DEVICE_TO_HOST_BANDWIDTH)
    return gpu_probe.host_bandwidth(node, gpu_probe.D2H_TESTCASE)


@pytest.fixture
@wave("node")
def node_nccl_allreduce(request: pytest.FixtureRequest, node: NodeHandle, spec: SpecLookup) -> Measurement:
    """Single-node all_reduce (the inter-node layer's ``nccl_allreduce`` fixture is the multi-node one)."""
    settings = spec(NODE_NCCL_ALLREDUCE)
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


@pytest.fixture
@wave("node")
def gpu_health(request: pytest.FixtureRequest, node: NodeHandle, spec: SpecLookup) -> Measurement:
    """``dcgmi diag -r LEVEL`` (``gpu_health: {level: 1}``) passes on every GPU of the node, and
    nvidia-smi shows no GPU memory fault (uncorrectable volatile ECC errors, a pending or failed
    row remap, a pending page retirement).

    A node without dcgmi is an error naming the package (DCGM is not part of every GPU node's
    install), as is everything else that stops the diagnostic."""
    settings = spec(GPU_HEALTH)
    try:
        measured = dcgm.diagnose(node, settings.level)
    except ToolMissing as exc:
        # An error of the node, never a skip: a missing tool must not turn a set check into a pass.
        raise ToolMissing(node.name, "dcgmi", command=exc.command,
                          package="datacenter-gpu-manager (and start nv-hostengine)") from None
    try:
        inv = node_gpus(request, node)  # the node's one GPU inventory, shared with the checks above
    except TransportError as exc:
        # gpu_count and the other inventory checks report why; the diagnostic still judges the node.
        return dataclasses.replace(measured, detail=f"{measured.detail}; GPU memory state not read: {exc}")
    return dcgm.with_memory_faults(measured, inv.gpus, inv.command, inv.evidence)


# --------------------------------------------------------------------------- GPU-NIC affinity
# Per node, each GPU's nearest NIC on its own PCIe switch; for the cluster, the same GPU-to-NIC rails
# on every node. Both read one ``nvidia-smi topo -m`` per node, once per run (probes/affinity.py).


def node_topology(request: pytest.FixtureRequest, node: NodeHandle) -> tuple[TopologyMatrix, CommandResult]:
    """The node's ``nvidia-smi topo -m``, read once per run (an error is kept for the node's other checks)."""
    return _state(request).once.get("topology", node.name, lambda: gpu_probe.topology(node))


@pytest.fixture
@wave("node")
def gpu_nic_affinity(request: pytest.FixtureRequest, node: NodeHandle, spec: SpecLookup) -> Measurement:
    """Each GPU's nearest NIC is over a path in the profile's ``paths`` (PIX or PXB)."""
    settings = spec(GPU_NIC_AFFINITY)
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
    spec(GPU_NIC_AFFINITY)
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
