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
lspci ``-vv``, dcgmproftester ``-t 1004``).  A tool another stand-in set already put on the node (say the
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
GPU_TOOLS: tuple[str, ...] = ("nvidia-smi", "nvbandwidth", "all_reduce_perf", "lspci", "dcgmproftester12")
_SAVED_SUFFIX = ".pre-gpu"  # where a tool we replace waits to be put back
# nvbandwidth's option table (tests/data/option-tables/nvbandwidth-<version>.txt, naming its source),
# baked into the stand-in beside the model: the stand-in refuses what that version refuses.
OPTION_TABLES_DIR = Path(__file__).resolve().parents[1] / "data" / "option-tables"


# NVLink per GPU by model (a substring of the name): (links, GB/s per link per direction). NVIDIA
# datasheets: V100 6 x NVLink2, A100 12 x NVLink3, H100/H200 18 x NVLink4 (25 GB/s a link each way:
# 300 and 450 GB/s one way), H800 8 x NVLink4 (200 GB/s), B200 18 x NVLink5 (50 GB/s a link).
NVLINK: dict[str, tuple[int, float]] = {
    "H800": (8, 25.0), "H100": (18, 25.0), "H200": (18, 25.0), "B200": (18, 50.0), "A100": (12, 25.0),
    "V100": (6, 25.0),
}
# GPUs on an NVSwitch with NVLink SHARP (NVLS): NCCL reduces in the switch on one node.
NVLS_MODELS = ("H100", "H200", "B200")
# Fractions of the hardware's line the simulated tools reach (each from a recorded run):
# - copy-engine peer reads: 172.2 of the H800's 200 GB/s (shared corpus nvbandwidth/h800-8gpu-v0.2-d2d-read-ce.txt);
NVLINK_CE_EFFICIENCY = 0.86
# - ring all_reduce over NVLink: 235 of an A100's 300 GB/s (shared corpus nccl-tests/all_reduce_perf-8x-a100-sxm4-40gb-old-format.txt);
NCCL_RING_EFFICIENCY = 0.78
# - NVLS all_reduce: of its bound, one way x 2(n-1)/n (each GPU sends and receives its buffer once
#   while busbw counts the ring's 2(n-1)/n): ~480 GB/s on 8 x H100, which azurehpc-health-checks
#   expects >= 460 of (conf/nd96isr_h100_v5.conf, the floor profiles/sim-gpu.yaml cites);
NCCL_NVLS_EFFICIENCY = 0.61
# - host <-> device copies: Gen4 x16 has a 31.5 GB/s line one way and measures ~26 GB/s.
PCIE_EFFICIENCY = 0.83
#: one PCIe lane one way after encoding, GB/s (8b/10b to Gen2, 128b/130b from Gen3)
PCIE_LANE_GBYTES = {1: 0.25, 2: 0.5, 3: 0.985, 4: 1.969, 5: 3.938, 6: 7.877}


# Dense FP16/BF16 tensor-core peak (TFLOP/s) and HBM bandwidth (GB/s) by model, from NVIDIA's datasheets
# (A100 40GB: 312 and 1555; H100 SXM: 989 and 3350; H200 SXM: 989 and 4800; B200: 2250 and 8000), the
# same table the checks' floors come from (pytest_fabric/checks/gpu_load.py).
GEMM_TFLOPS: dict[str, float] = {"A100": 312.0, "H100": 989.0, "H200": 989.0, "B200": 2250.0}
HBM_GBYTES: dict[str, float] = {"A100": 1555.0, "H100": 3350.0, "H200": 4800.0, "B200": 8000.0}
# - dcgmproftester -t 1004 on an A100 reads 253 TFLOP/s of 312 (the DCGM user guide's run,
#   tests/data/dcgmproftester/a100-1gpu-dcgm3-t1004-nvidia-user-guide.txt);
GEMM_EFFICIENCY = 0.81
# - nvbandwidth device_local_copy on 8 H100 SXM reads 1519 GB/s of HBM3's 3350 / 2 (Hugging Face's
#   Smol Training Playbook; tests/data/nvbandwidth/h100-8gpu-v0.8-device-local-copy-gpu6-slow-constructed.txt).
HBM_COPY_EFFICIENCY = 0.907


def nvlink_of(model: str) -> tuple[int, float]:
    """(links, GB/s per link per direction) of a GPU model; (0, 0) for a GPU without NVLink."""
    return next((v for k, v in NVLINK.items() if k.lower() in model.lower()), (0, 0.0))


def nccl_nvlink_busbw(model: str, gpus: int, nvls: bool | None = None) -> float:
    """all_reduce busbw (GB/s) over one node's NVLink: NVLS where the model has it, else a ring."""
    links, per_link = nvlink_of(model)
    one_way = links * per_link
    if gpus < 2:
        return 0.0
    if nvls if nvls is not None else any(m.lower() in model.lower() for m in NVLS_MODELS):
        return one_way * 2 * (gpus - 1) / gpus * NCCL_NVLS_EFFICIENCY
    return one_way * NCCL_RING_EFFICIENCY


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
    # Every figure the tools print is derived from this hardware, never given: CE peer reads from
    # the model's NVLink (links x per link x nvlink_ce_efficiency), host <-> device copies from each
    # GPU's trained PCIe link (generation x width line x pcie_efficiency, so a GPU trained at Gen4 x8
    # copies a quarter of Gen5 x16), all_reduce from NVLink (nccl_nvlink_busbw).
    nvlink_ce_efficiency: float = NVLINK_CE_EFFICIENCY
    pcie_efficiency: float = PCIE_EFFICIENCY
    nvls: bool | None = None  # NCCL's NVLink SHARP; None: the model has it (NVLS_MODELS)
    slow_pairs: dict[tuple[int, int], float] = field(default_factory=dict)  # pair -> GB/s both ways (a fault)
    inactive: list[int] = field(default_factory=list)  # GPUs whose NVLinks are all down
    nccl_wrong_elements: int = 0  # all_reduce_perf's #wrong in both halves; non-zero: FAILED trailer, exit 1
    nics: int = 8
    nic_pcie: dict[int, tuple[int, int]] = field(default_factory=dict)  # NIC -> (generation, width)
    nic_of: dict[int, int] = field(default_factory=dict)  # GPU -> the NIC under its PCIe switch (default: same index)
    nic_path: dict[int, str] = field(default_factory=dict)  # GPU -> the path topo -m shows to every NIC ("SYS")
    # GPU -> (state, status) the NVSwitch fabric manager left it in (a fault); the others Completed/Success
    fabric: dict[int, tuple[str, str]] = field(default_factory=dict)
    # GPU -> (uncorrectable volatile DRAM ECC errors, row remap pending) nvidia-smi shows (a fault)
    memory: dict[int, tuple[int, bool]] = field(default_factory=dict)
    acs_on: bool = False  # ACS redirection on at the PCIe switch ports above each GPU and NIC (lspci -vvv)
    # GPU -> (PCIe replays since reset at the first read, replays added on every later read of
    # nvidia-smi -q / -q -x): a link that replays while it runs (a fault); the others 0
    replays: dict[int, tuple[int, int]] = field(default_factory=dict)
    # GPU -> its share of the model's tensor-core rate under dcgmproftester -t 1004 (a fault: 0.7)
    gemm_scale: dict[int, float] = field(default_factory=dict)
    # GPU -> its share of the model's HBM copy bandwidth under nvbandwidth device_local_copy (a fault)
    hbm_scale: dict[int, float] = field(default_factory=dict)
    # GPU -> clock-event reasons active while a GEMM runs, beyond the power cap every GPU reaches
    # (a fault: ["hw_slowdown"])
    throttle_under_load: dict[int, list[str]] = field(default_factory=dict)
    # the driver's name for nvidia-smi's reason fields: clocks_throttle_reasons before R535
    clock_event_prefix: str = "clocks_event_reasons"
    gemm_efficiency: float = GEMM_EFFICIENCY
    gemm_report_s: float = 1.0  # dcgmproftester's reading interval (its -r)

    @property
    def nvlink_gbytes(self) -> float:
        """A GPU's NVLink one way (GB/s): links x GB/s per link, from the model."""
        links, per_link = nvlink_of(self.model)
        return links * per_link

    def nccl_busbw(self, gpus: int | None = None) -> float:
        """The derived single-node all_reduce busbw over ``gpus`` (all of them by default)."""
        return nccl_nvlink_busbw(self.model, self.count if gpus is None else gpus, self.nvls)

    def copy_gbytes(self, generation: int, width: int) -> float:
        """The derived host <-> device copy of a GPU whose link trained at ``generation`` x ``width``."""
        return PCIE_LANE_GBYTES[generation] * width * self.pcie_efficiency

    def to_json(self) -> str:
        data = dataclasses.asdict(self)
        # the derived hardware figures the stand-in needs
        data["nvlink_gbytes"] = self.nvlink_gbytes
        data["nvls"] = self.nvls if self.nvls is not None else any(m.lower() in self.model.lower() for m in NVLS_MODELS)
        data["pcie_lane_gbytes"] = {str(k): v for k, v in PCIE_LANE_GBYTES.items()}
        data["nccl_nvls_efficiency"] = NCCL_NVLS_EFFICIENCY
        data["nccl_ring_efficiency"] = NCCL_RING_EFFICIENCY
        # JSON keys must be strings; the stand-in turns them back into pairs/ints.
        data["slow_pairs"] = [[a, b, v] for (a, b), v in self.slow_pairs.items()]
        data["pcie"] = {str(k): list(v) for k, v in self.pcie.items()}
        data["nic_pcie"] = {str(k): list(v) for k, v in self.nic_pcie.items()}
        data["fabric"] = {str(k): list(v) for k, v in self.fabric.items()}
        data["memory"] = {str(k): list(v) for k, v in self.memory.items()}
        data["replays"] = {str(k): list(v) for k, v in self.replays.items()}
        data["pcie_only_pairs"] = [list(p) for p in self.pcie_only_pairs]
        data["gemm_tflops"] = next((v for k, v in GEMM_TFLOPS.items() if k in self.model), 0.0)
        data["hbm_gbytes"] = next((v for k, v in HBM_GBYTES.items() if k in self.model), 0.0)
        data["hbm_copy_efficiency"] = HBM_COPY_EFFICIENCY
        data["gemm_scale"] = {str(k): v for k, v in self.gemm_scale.items()}
        data["hbm_scale"] = {str(k): v for k, v in self.hbm_scale.items()}
        data["throttle_under_load"] = {str(k): list(v) for k, v in self.throttle_under_load.items()}
        return json.dumps(data, sort_keys=True)


def _bindir(cluster: SimCluster, node: SimNode | str) -> Path:
    resolved = cluster.node(node) if isinstance(node, str) else node
    return resolved.bindir


def install_gpus(cluster: SimCluster, node: SimNode | str, gpus: FakeGpus | None = None) -> None:
    """Install the GPU stand-ins on one node (replacing, and keeping aside, tools of the same name)."""
    gpus = gpus or FakeGpus()
    source = STANDIN_SOURCE.read_text()
    table = (OPTION_TABLES_DIR / f"nvbandwidth-{gpus.nvbandwidth_version}.txt").read_text()
    # The marker first: _is_ours reads only the head of a file.
    script = (f"#!/usr/bin/env python3\n# GPU stand-in (tests/simcluster/gpu.py)\nMODEL_JSON = {gpus.to_json()!r}\n"
              f"NVBANDWIDTH_TABLE = {table!r}\n" + source)
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
