"""``nvidia-smi topo -m`` / ``-mp``: the GPU/NIC connection matrix.

The matrix is a square table of devices (``GPU0``.., ``NIC0``.., or ``mlx5_0``.. on
old drivers) followed, on GPU rows, by ``CPU Affinity``, ``NUMA Affinity`` and
(newer drivers) ``GPU NUMA ID`` columns.  Drivers separate cells with tabs or
with padding spaces, and some wrap the header in an ANSI underline; we split on
whitespace because no link cell or affinity value contains a space.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from pytest_fabric.parsers.base import UnrecognizedOutput, register

__all__ = [
    "Link",
    "TopologyMatrix",
    "parse_nvidia_smi_topo",
    "gpu_pairs_without_nvlink",
    "nearest_nics",
]

TOOL = "nvidia-smi-topo"

_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
_DEVICE = re.compile(r"^(GPU\d+|NIC\d+|mlx\d+_\d+|[a-z]+\d*_\d+)$")
_NV = re.compile(r"^NV(\d+)$")
_LEGEND_NIC = re.compile(r"^\s*(NIC\d+)\s*:\s*(\S+)\s*$")
_TRAILING_COLUMNS = ("CPU Affinity", "NUMA Affinity", "GPU NUMA ID")

# Closeness of a path, smaller is closer.  NVLink beats any PCIe path; among PCIe
# paths the legend orders them: one bridge, several bridges, host bridge, across
# host bridges in one NUMA node, across the SMP interconnect.  SOC is the name
# old drivers used for SYS.
_RANK = {"X": 0, "NV": 1, "NVLINK": 1, "PIX": 2, "PXB": 3, "PHB": 4, "NODE": 5, "SYS": 6, "SOC": 6}


@dataclass(frozen=True)
class Link:
    """One cell of the matrix: ``kind`` is ``X``, ``NV``, ``PIX``, ``PXB``, ``PHB``, ``NODE``, ``SYS``, ``SOC``
    (or ``NVLINK`` where a driver prints the word); ``nvlink_count`` is the ``#`` of ``NV#``."""

    kind: str
    nvlink_count: int | None = None

    @property
    def text(self) -> str:
        """The cell as nvidia-smi printed it (``NV8``, ``PIX``)."""
        return f"NV{self.nvlink_count}" if self.kind == "NV" and self.nvlink_count is not None else self.kind

    @property
    def is_nvlink(self) -> bool:
        """True for ``NV#`` and ``NVLink`` cells: the pair talks over NVLink, not PCIe."""
        return self.kind in ("NV", "NVLINK")

    @property
    def rank(self) -> int:
        """Closeness of the path: 0 self, 1 NVLink, 2 PIX ... 6 SYS; 7 for a kind we do not know."""
        return _RANK.get(self.kind, 7)


@dataclass(frozen=True)
class TopologyMatrix:
    """The whole ``topo -m`` table.

    ``links[(a, b)]`` is the cell on row ``a``, column ``b`` (device names as printed,
    ``GPU0``, ``NIC3``).  Affinity fields hold the text as printed, ``None`` where the
    column is absent or ``N/A``.
    """

    devices: tuple[str, ...]
    links: dict[tuple[str, str], Link]
    cpu_affinity: dict[str, str | None]
    numa_affinity: dict[str, int | None]
    gpu_numa_id: dict[str, int | None]
    nic_names: dict[str, str]

    @property
    def gpus(self) -> tuple[str, ...]:
        """GPU device names in table order (``GPU0``, ``GPU1`` ...)."""
        return tuple(d for d in self.devices if d.startswith("GPU"))

    @property
    def nics(self) -> tuple[str, ...]:
        """NIC device names in table order (``NIC0`` ... or ``mlx5_0`` ... on old drivers)."""
        return tuple(d for d in self.devices if not d.startswith("GPU"))

    def link(self, a: int | str, b: int | str) -> Link:
        """The link between two devices; ints mean GPU indexes (``link(0, 7)`` is GPU0-GPU7)."""
        key = (_name(a), _name(b))
        try:
            return self.links[key]
        except KeyError:
            raise KeyError(f"no {key[0]}-{key[1]} cell in the topology matrix; devices: {', '.join(self.devices)}") from None

    def nic_device(self, nic: str) -> str:
        """The RDMA device name of a NIC column (``NIC0`` -> ``mlx5_0``); the name itself if no legend."""
        return self.nic_names.get(nic, nic)


def _name(device: int | str) -> str:
    return f"GPU{device}" if isinstance(device, int) else device


def _parse_cell(cell: str) -> Link | None:
    cell = cell.strip()
    match = _NV.match(cell)
    if match:
        return Link("NV", int(match.group(1)))
    upper = cell.upper()
    if upper in _RANK:
        return Link(upper)
    return None


def _int_or_none(text: str | None) -> int | None:
    if text is None:
        return None
    try:
        return int(text)
    except ValueError:
        return None


@register(TOOL, "nvidia-smi topo -m / -mp: GPU/NIC link matrix, CPU/NUMA affinity, NIC legend", corpus=("nvidia-smi-topo",))
def parse_nvidia_smi_topo(text: str) -> TopologyMatrix:
    """Parse ``nvidia-smi topo -m`` (or ``-mp``) output into a :class:`TopologyMatrix`."""
    lines = [_ANSI.sub("", line).rstrip("\r") for line in text.splitlines()]
    header_index = None
    for index, line in enumerate(lines):
        tokens = line.split()
        if tokens and tokens[0] == "GPU0":
            header_index = index
            break
    if header_index is None:
        raise UnrecognizedOutput(TOOL, "no matrix header starting with 'GPU0' found")
    header = lines[header_index]
    devices: list[str] = []
    for token in header.split():
        if _DEVICE.match(token):
            devices.append(token)
        else:
            break
    rest = header.split(None, len(devices))[len(devices)] if len(header.split()) > len(devices) else ""
    trailing = [column for column in _TRAILING_COLUMNS if column in rest]

    links: dict[tuple[str, str], Link] = {}
    cpu_affinity: dict[str, str | None] = {}
    numa_affinity: dict[str, int | None] = {}
    gpu_numa_id: dict[str, int | None] = {}
    seen_rows: set[str] = set()
    for offset, line in enumerate(lines[header_index + 1 :], start=header_index + 2):
        tokens = line.split()
        if not tokens or tokens[0] not in devices:
            if seen_rows and (not tokens or tokens[0].startswith("Legend")):
                break
            continue
        row = tokens[0]
        cells = tokens[1 : 1 + len(devices)]
        if len(cells) < len(devices):
            raise UnrecognizedOutput(
                TOOL, f"row {row} has {len(cells)} link cells, expected {len(devices)}", line=offset
            )
        for column, cell in zip(devices, cells):
            link = _parse_cell(cell)
            if link is None:
                raise UnrecognizedOutput(TOOL, f"row {row}, column {column}: unknown link type {cell!r}", line=offset)
            links[(row, column)] = link
        extra = tokens[1 + len(devices) :]
        values = dict(zip(trailing, extra))
        if row.startswith("GPU"):
            cpu = values.get("CPU Affinity")
            cpu_affinity[row] = None if cpu in (None, "N/A") else cpu
            numa_affinity[row] = _int_or_none(values.get("NUMA Affinity"))
            gpu_numa_id[row] = _int_or_none(values.get("GPU NUMA ID"))
        seen_rows.add(row)

    missing = [d for d in devices if d not in seen_rows]
    if missing:
        raise UnrecognizedOutput(TOOL, f"matrix rows missing for {', '.join(missing)} (truncated output?)")

    nic_names: dict[str, str] = {}
    for line in lines:
        match = _LEGEND_NIC.match(line)
        if match and match.group(1) in devices:
            nic_names[match.group(1)] = match.group(2)
    return TopologyMatrix(tuple(devices), links, cpu_affinity, numa_affinity, gpu_numa_id, nic_names)


def gpu_pairs_without_nvlink(result: TopologyMatrix) -> list[tuple[str, str]]:
    """GPU pairs (``("GPU0", "GPU5")``, each once, lower index first) whose link is not NVLink.

    Empty for a single-GPU node.  A ``topo -mp`` matrix shows PCIe paths only, so every
    pair appears here: run ``topo -m`` to judge NVLink.
    """
    gpus = result.gpus
    pairs = []
    for i, a in enumerate(gpus):
        for b in gpus[i + 1 :]:
            if not result.link(a, b).is_nvlink:
                pairs.append((a, b))
    return pairs


def nearest_nics(result: TopologyMatrix, gpu: int | str) -> tuple[str, ...]:
    """The NIC columns closest to ``gpu`` (several when tied), by PCIe path: PIX best, SYS worst.

    Empty when the matrix has no NICs.  Use :meth:`TopologyMatrix.nic_device` for ``mlx5_*`` names.
    """
    name = _name(gpu)
    nics = result.nics
    if not nics:
        return ()
    ranks = {nic: result.link(name, nic).rank for nic in nics}
    best = min(ranks.values())
    return tuple(nic for nic in nics if ranks[nic] == best)
