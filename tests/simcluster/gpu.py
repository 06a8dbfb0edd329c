"""Fake GPUs for the simulated cluster: a model per node, and stand-in tools that print it.

Tests describe a node's GPUs (how many, which model, a PCIe-only pair, a GPU
trained at Gen4 x8, a slow NVLink pair, a GPU whose links are all inactive, an
all_reduce that returns wrong results) and install them on one node::

    install_gpus(cluster, "node03", FakeGpus(pcie_only_pairs=[(2, 5)]))
    try:
        ...  # nvidia-smi, nvbandwidth, all_reduce_perf, lspci over SSH
    finally:
        uninstall_gpus(cluster, "node03")

The stand-ins are one Python program (``standins/gpu_standin.py``) with the
node's model baked in, installed under each tool name (it dispatches on the
name it was started as).  Outputs follow the real formats recorded in the
shared corpus and tests/data (nvidia-smi ``-q -x``/``-q``/``topo -m``/
``nvlink --status``/``--query-gpu``/``-L``, nvbandwidth v0.7, nccl-tests,
lspci ``-vv``).  A tool another stand-in set already put on the node (say the
RDMA stand-ins' ``all_reduce_perf``) is moved aside while ours is installed and
put back by :func:`uninstall_gpus`, so both sets can be used in one session.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from pathlib import Path

from simcluster.cluster import SimCluster, SimNode

__all__ = ["GPU_TOOLS", "FakeGpus", "install_gpus", "installed_gpu_nodes", "uninstall_gpus"]

STANDIN_SOURCE = Path(__file__).parent / "standins" / "gpu_standin.py"
GPU_TOOLS: tuple[str, ...] = ("nvidia-smi", "nvbandwidth", "all_reduce_perf", "lspci")
_SAVED_SUFFIX = ".pre-gpu"  # where a tool we replace waits to be put back


@dataclass
class FakeGpus:
    """One node's GPUs, NICs and what the tools would measure on them.

    Defaults: 8 x H100 SXM on NVSwitch (every pair NV18), PCIe Gen5 x16, busy
    (P0), 8 ConnectX-7 NICs at Gen5 x16.  Pairs are GPU indexes, either order.
    """

    count: int = 8
    model: str = "NVIDIA H100 80GB HBM3"
    driver: str = "550.90.07"
    cuda: str = "12.4"
    nvbandwidth_version: str = "v0.7"
    nccl_version: str = "2.21.5"
    pcie_only_pairs: list[tuple[int, int]] = field(default_factory=list)
    pcie_path: str = "SYS"  # what topo -m prints for a PCIe-only pair
    max_generation: int = 5  # pcie.link.gen.max of every GPU (4 for A100-class nodes)
    # GPU -> (generation, width) the link trained at; others at max_generation x16
    pcie: dict[int, tuple[int, int]] = field(default_factory=dict)
    # GPUs in P8 while nothing copies: the link reads Gen1 (power saving); under load (a running
    # `nvbandwidth -t host_to_all_memcpy_ce`) they are P0 at their trained link, as real GPUs are
    idle: list[int] = field(default_factory=list)
    load_seconds: float = 1.0  # how long host_to_all_memcpy_ce keeps the GPUs busy
    nvlink_gbytes: float = 391.7  # CE read per pair, GB/s
    slow_pairs: dict[tuple[int, int], float] = field(default_factory=dict)  # pair -> GB/s both ways
    inactive: list[int] = field(default_factory=list)  # GPUs whose NVLinks are all down
    h2d_gbytes: float = 55.3
    d2h_gbytes: float = 55.1
    nccl_busbw_gbytes: float = 480.0
    nccl_wrong_elements: int = 0  # all_reduce_perf's #wrong in both halves; non-zero: FAILED trailer, exit 1
    nics: int = 8
    nic_pcie: dict[int, tuple[int, int]] = field(default_factory=dict)  # NIC -> (generation, width)
    nic_of: dict[int, int] = field(default_factory=dict)  # GPU -> the NIC under its PCIe switch (default: same index)
    nic_path: dict[int, str] = field(default_factory=dict)  # GPU -> the path topo -m shows to every NIC ("SYS")
    acs_on: bool = False  # ACS redirection on at the PCIe switch ports above each GPU and NIC (lspci -vvv)

    def to_json(self) -> str:
        data = dataclasses.asdict(self)
        # JSON keys must be strings; the stand-in turns them back into pairs/ints.
        data["slow_pairs"] = [[a, b, v] for (a, b), v in self.slow_pairs.items()]
        data["pcie"] = {str(k): list(v) for k, v in self.pcie.items()}
        data["nic_pcie"] = {str(k): list(v) for k, v in self.nic_pcie.items()}
        data["pcie_only_pairs"] = [list(p) for p in self.pcie_only_pairs]
        return json.dumps(data, sort_keys=True)


def _bindir(cluster: SimCluster, node: SimNode | str) -> Path:
    resolved = cluster.node(node) if isinstance(node, str) else node
    return resolved.bindir


def install_gpus(cluster: SimCluster, node: SimNode | str, gpus: FakeGpus | None = None) -> None:
    """Install the GPU stand-ins on one node (replacing, and keeping aside, tools of the same name)."""
    gpus = gpus or FakeGpus()
    source = STANDIN_SOURCE.read_text()
    script = f"#!/usr/bin/env python3\nMODEL_JSON = {gpus.to_json()!r}\n" + source
    bindir = _bindir(cluster, node)
    for tool in GPU_TOOLS:
        target = bindir / tool
        saved = bindir / (tool + _SAVED_SUFFIX)
        if target.exists() and not saved.exists() and not _is_ours(target):
            target.replace(saved)
        cluster.install_tool(node, tool, script)


def _is_ours(path: Path) -> bool:
    try:
        return "GPU stand-in" in path.read_text(errors="replace")[:4000]
    except OSError:
        return False


def uninstall_gpus(cluster: SimCluster, node: SimNode | str | None = None) -> None:
    """Remove the GPU stand-ins from one node (every node when ``node`` is None) and put back what they replaced."""
    nodes = cluster.nodes if node is None else [cluster.node(node) if isinstance(node, str) else node]
    for each in nodes:
        bindir = each.bindir
        for tool in GPU_TOOLS:
            target = bindir / tool
            if target.exists() and _is_ours(target):
                cluster.remove_tool(each, tool)
            saved = bindir / (tool + _SAVED_SUFFIX)
            if saved.exists():
                saved.replace(target)


def installed_gpu_nodes(cluster: SimCluster) -> list[str]:
    """Nodes that still carry a GPU stand-in (a test that forgot to clean up)."""
    return [n.name for n in cluster.nodes if any(_is_ours(n.bindir / t) for t in GPU_TOOLS if (n.bindir / t).exists())]
