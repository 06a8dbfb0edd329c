"""``nvidia-smi -q`` (and ``-q -i N``): the human-readable per-GPU log.

The log is an indented tree of ``Key : value`` lines and bare section titles.
We rebuild that tree from the indentation, then read the fields we need by
path, so fields added by newer drivers (there are many) never disturb parsing.

Read from drivers 450-590: ``ECC Errors`` (``Volatile``/``Aggregate``; SRAM
``Uncorrectable Parity``/``SEC-DED`` since 535, one ``SRAM Uncorrectable`` before,
``Single Bit``/``Double Bit`` before the SRAM/DRAM split), ``Retired Pages``,
``Remapped Rows`` (``Pending``, ``Remapping Failure Occurred``) and ``Fabric``
(``State``/``Status``, ``CliqueId``, ``ClusterUUID`` and ``Health`` on NVSwitch
systems).  A line before the log that is neither a field nor the banner (a
``WARNING: infoROM is corrupted`` line) is skipped and listed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from pytest_fabric.parsers._nvidia_smi_gpu import (
    EccCounts,
    GpuInfo,
    NvidiaSmiReport,
    clean,
    ecc_counts,
    to_bool,
    to_int,
    width_to_int,
)
from pytest_fabric.parsers.base import SkippedLines, ToolReportedError, UnrecognizedOutput, register

__all__ = ["GpuInfo", "NvidiaSmiReport", "parse_nvidia_smi_q"]

TOOL = "nvidia-smi-q"

_GPU_HEADER = re.compile(
    r"^GPU\s+([0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-9A-Fa-f])\s*$"
)
_KEY_VALUE = re.compile(r"^(?P<key>[^:]*?\S)\s+:\s?(?P<value>.*)$")
_TOOL_ERRORS = (
    "NVIDIA-SMI has failed",
    "No devices were found",
    "Unable to determine the device handle",
)


@dataclass
class _Node:
    key: str
    value: str | None
    indent: int
    children: list[_Node] = field(default_factory=list)

    def find(self, *path: str) -> _Node | None:
        node: _Node | None = self
        for key in path:
            if node is None:
                return None
            node = next((child for child in node.children if child.key == key), None)
        return node

    def get(self, *path: str) -> str | None:
        node = self.find(*path)
        return None if node is None else node.value


def _tree(lines: list[str]) -> _Node:
    root = _Node("", None, -1)
    stack = [root]
    for line in lines:
        if not line.strip():
            continue
        indent = len(line) - len(line.lstrip(" "))
        stripped = line.strip()
        match = _KEY_VALUE.match(stripped)
        if match:
            node = _Node(match.group("key"), match.group("value").strip(), indent)
        else:
            node = _Node(stripped, None, indent)
        while stack[-1].indent >= indent:
            stack.pop()
        stack[-1].children.append(node)
        stack.append(node)
    return root


@register(
    TOOL,
    "nvidia-smi -q: per-GPU name, bus id, PCIe generation/width, MIG mode, driver/CUDA versions",
    corpus=("nvidia-smi-q",),
)
def parse_nvidia_smi_q(text: str) -> NvidiaSmiReport:
    """Parse ``nvidia-smi -q`` text into a :class:`NvidiaSmiReport` (one :class:`GpuInfo` per ``GPU <bus id>`` block)."""
    lines = [line.replace("\t", "    ").rstrip("\r") for line in text.splitlines()]
    for message in _TOOL_ERRORS:
        for line in lines:
            if message in line:
                raise ToolReportedError(TOOL, line.strip())

    header: list[str] = []
    blocks: list[tuple[str, list[str]]] = []
    for line in lines:
        match = _GPU_HEADER.match(line)
        if match:
            blocks.append((match.group(1), []))
        elif blocks:
            blocks[-1][1].append(line)
        else:
            header.append(line)
    skipped = SkippedLines()
    for line in header:
        stripped = line.strip()
        if stripped and not _KEY_VALUE.match(stripped) and "NVSMI LOG" not in stripped:
            skipped.add(stripped)
    top = _tree(header)
    if not blocks:
        if "NVSMI LOG" in text or top.find("Driver Version") is not None:
            raise UnrecognizedOutput(
                TOOL, "an nvidia-smi log with no 'GPU <bus id>' section (no GPU shown)"
            )
        raise UnrecognizedOutput(TOOL, "no '==NVSMI LOG==' header or 'GPU <bus id>' section found")

    gpus = tuple(_gpu(index, bus_id, _tree(body)) for index, (bus_id, body) in enumerate(blocks))
    return NvidiaSmiReport(
        driver_version=clean(top.get("Driver Version")),
        cuda_version=clean(top.get("CUDA Version")),
        attached_gpus=to_int(top.get("Attached GPUs")),
        timestamp=clean(top.get("Timestamp")),
        gpus=gpus,
        skipped=skipped.lines,
        skipped_count=skipped.count,
    )


def _gpu(index: int, bus_id: str, node: _Node) -> GpuInfo:
    link = node.find("PCI", "GPU Link Info")
    generation = link.find("PCIe Generation") if link else None
    width = link.find("Link Width") if link else None

    def gen(key: str) -> int | None:
        return to_int(generation.get(key)) if generation else None

    def wid(key: str) -> int | None:
        return width_to_int(width.get(key)) if width else None

    mig_devices = node.find("MIG Devices")
    mig_count = (
        sum(1 for child in mig_devices.children if child.key == "MIG Device") if mig_devices else 0
    )
    return GpuInfo(
        index=index,
        bus_id=clean(node.get("PCI", "Bus Id")) or bus_id,
        product_name=clean(node.get("Product Name")),
        product_architecture=clean(node.get("Product Architecture")),
        uuid=clean(node.get("GPU UUID")),
        serial_number=clean(node.get("Serial Number")),
        minor_number=to_int(node.get("Minor Number")),
        module_id=to_int(node.get("Module ID") or node.get("Platform Info", "Module Id")),
        pcie_generation_current=gen("Current"),
        pcie_generation_max=gen("Max"),
        pcie_generation_device_current=gen("Device Current"),
        pcie_generation_device_max=gen("Device Max"),
        pcie_generation_host_max=gen("Host Max"),
        pcie_link_width_current=wid("Current"),
        pcie_link_width_max=wid("Max"),
        pcie_replays_since_reset=to_int(node.get("PCI", "Replays Since Reset")),
        mig_mode_current=clean(node.get("MIG Mode", "Current")),
        mig_mode_pending=clean(node.get("MIG Mode", "Pending")),
        mig_device_count=mig_count,
        ecc_mode_current=clean(node.get("ECC Mode", "Current")),
        ecc_volatile=_ecc(node.find("ECC Errors", "Volatile")),
        ecc_aggregate=_ecc(node.find("ECC Errors", "Aggregate")),
        retired_pages_single_bit=to_int(node.get("Retired Pages", "Single Bit ECC")),
        retired_pages_double_bit=to_int(node.get("Retired Pages", "Double Bit ECC")),
        retired_pages_pending=to_bool(
            node.get("Retired Pages", "Pending Page Blacklist")
            or node.get("Retired Pages", "Pending Page Retirement")
            or node.get("Retired Pages", "Pending")
        ),
        remapped_rows_correctable=to_int(node.get("Remapped Rows", "Correctable Error")),
        remapped_rows_uncorrectable=to_int(node.get("Remapped Rows", "Uncorrectable Error")),
        remapped_rows_pending=to_bool(node.get("Remapped Rows", "Pending")),
        remapped_rows_failure=to_bool(node.get("Remapped Rows", "Remapping Failure Occurred")),
        fabric_state=clean(node.get("Fabric", "State")),
        fabric_status=clean(node.get("Fabric", "Status")),
        fabric_clique_id=to_int(node.get("Fabric", "CliqueId")),
        fabric_cluster_uuid=clean(node.get("Fabric", "ClusterUUID")),
        fabric_health_summary=clean(node.get("Fabric", "Health", "Summary")),
        fabric_health=_fabric_health(node.find("Fabric", "Health")),
    )


def _ecc(counts: _Node | None) -> EccCounts | None:
    if counts is None:
        return None
    if counts.find("Double Bit") is not None or counts.find("Single Bit") is not None:
        # Drivers before the SRAM/DRAM split: single-bit errors are corrected, double-bit are not.
        return ecc_counts(
            None, [], counts.get("Single Bit", "Total"), counts.get("Double Bit", "Total")
        )
    return ecc_counts(
        counts.get("SRAM Correctable"),
        [
            counts.get("SRAM Uncorrectable"),
            counts.get("SRAM Uncorrectable Parity"),
            counts.get("SRAM Uncorrectable SEC-DED"),
        ],
        counts.get("DRAM Correctable"),
        counts.get("DRAM Uncorrectable"),
    )


def _fabric_health(health: _Node | None) -> dict[str, str]:
    if health is None:
        return {}
    shown = {child.key: clean(child.value) for child in health.children if child.key != "Summary"}
    return {key: value for key, value in shown.items() if value is not None}
