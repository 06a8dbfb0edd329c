"""GPU-NIC affinity from ``nvidia-smi topo -m``: each GPU's nearest NIC, and the rails it makes.

GPUDirect RDMA and NCCL's network traffic move between a GPU and a NIC over PCIe; they are at
full speed when the two share a PCIe switch (``PIX``: one bridge, ``PXB``: several) and cross
the CPU's host bridge (``PHB``), the host bridges of a socket (``NODE``) or the socket
interconnect (``SYS``) otherwise. Each GPU's nearest NIC is its rail: the GPU-to-NIC mapping
must be the same on every node, or NCCL's rings cross rails between nodes. Pure: the matrix
is read by :func:`pytest_fabric.probes.gpu.topology`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from pytest_fabric.parsers.nvidia_smi_topo import TopologyMatrix, nearest_nics
from pytest_fabric.probes.software import odd_ones

__all__ = ["GpuRail", "far_gpus", "rail_differences", "rails"]


@dataclass(frozen=True)
class GpuRail:
    """A GPU, its nearest NIC(s) by RDMA device name, and the path to them."""

    gpu: str
    nics: tuple[str, ...]
    path: str  # PIX, PXB, PHB, NODE or SYS; "none" when the matrix shows no NIC

    @property
    def nic_text(self) -> str:
        return " or ".join(self.nics) if self.nics else "no NIC"


def rails(matrix: TopologyMatrix) -> list[GpuRail]:
    """Every GPU's nearest NIC(s), named as RDMA devices (the NIC legend: ``NIC0`` -> ``mlx5_0``)."""
    out = []
    for gpu in matrix.gpus:
        nearest = nearest_nics(matrix, gpu)
        path = matrix.link(gpu, nearest[0]).text if nearest else "none"
        out.append(GpuRail(gpu, tuple(matrix.nic_device(n) for n in nearest), path))
    return out


def far_gpus(found: Iterable[GpuRail], allowed: Iterable[str]) -> list[str]:
    """GPUs whose nearest NIC is reached only over a path not in ``allowed``:
    ``GPU3 reaches its nearest NIC (mlx5_0 or mlx5_1) only over NODE``."""
    ok = set(allowed)
    return [f"{r.gpu} reaches its nearest NIC ({r.nic_text}) only over {r.path}" for r in found if r.path not in ok]


def rail_differences(by_node: Mapping[str, Iterable[GpuRail]]) -> list[str]:
    """Per GPU, the nodes whose nearest NIC differs from the majority's:
    ``node03: GPU2 -> mlx5_3; 7 others mlx5_2``."""
    maps = {node: {r.gpu: r.nic_text for r in found} for node, found in by_node.items()}
    gpus = sorted({g for m in maps.values() for g in m}, key=lambda g: int(g[3:]) if g[3:].isdigit() else 0)
    findings: list[str] = []
    for gpu in gpus:
        findings += odd_ones({node: m.get(gpu, "absent") for node, m in maps.items()}, f"{gpu} ->")
    return findings
