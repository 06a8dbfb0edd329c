"""``nvidia-smi -q -x``: the XML form of the per-GPU log (DTD v11, v12, v13).

The XML comes from a remote node, so it is untrusted: a document that declares
entities (the "billion laughs" expansion) or carries an internal DTD subset is
refused before the parser sees it.  The usual ``<!DOCTYPE nvidia_smi_log SYSTEM
"nvsmi_device_v12.dtd">`` is harmless: ElementTree never fetches external DTDs.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ElementTree

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
from pytest_fabric.parsers.base import ParseError, ToolReportedError, UnrecognizedOutput, register

__all__ = ["GpuInfo", "NvidiaSmiReport", "parse_nvidia_smi_xml"]

TOOL = "nvidia-smi-xml"

_DOCTYPE_SUBSET = re.compile(r"<!DOCTYPE[^>\[]*\[", re.IGNORECASE)


def _text(element: ElementTree.Element | None, path: str) -> str | None:
    if element is None:
        return None
    found = element.find(path)
    return None if found is None or found.text is None else found.text.strip()


@register(
    TOOL,
    "nvidia-smi -q -x: per-GPU name, bus id, PCIe generation/width, MIG mode, driver/CUDA versions",
    corpus=("nvidia-smi-xml",),
)
def parse_nvidia_smi_xml(text: str) -> NvidiaSmiReport:
    """Parse ``nvidia-smi -q -x`` XML into a :class:`NvidiaSmiReport` (same facts as ``-q``)."""
    if "<!ENTITY" in text.upper() or _DOCTYPE_SUBSET.search(text):
        raise ParseError(
            TOOL,
            "refusing XML that declares entities or an internal DTD subset (not nvidia-smi output)",
        )
    start = text.find("<")
    if start < 0:
        first = text.strip().splitlines()[0] if text.strip() else ""
        if first.startswith(("NVIDIA-SMI has failed", "No devices were found")):
            raise ToolReportedError(TOOL, first)
        raise UnrecognizedOutput(TOOL, "no XML in the output")
    try:
        root = ElementTree.fromstring(text[start:])
    except ElementTree.ParseError as exc:
        raise ParseError(TOOL, f"malformed XML: {exc}") from None
    except (ValueError, RecursionError) as exc:  # e.g. characters XML forbids
        raise ParseError(TOOL, f"unreadable XML: {exc}") from None
    if root.tag != "nvidia_smi_log":
        raise UnrecognizedOutput(TOOL, f"root element is <{root.tag}>, expected <nvidia_smi_log>")

    gpus = tuple(_gpu(index, element) for index, element in enumerate(root.findall("gpu")))
    return NvidiaSmiReport(
        driver_version=clean(_text(root, "driver_version")),
        cuda_version=clean(_text(root, "cuda_version")),
        attached_gpus=to_int(_text(root, "attached_gpus")),
        timestamp=clean(_text(root, "timestamp")),
        gpus=gpus,
    )


def _gpu(index: int, gpu: ElementTree.Element) -> GpuInfo:
    link = gpu.find("pci/pci_gpu_link_info")
    return GpuInfo(
        index=index,
        bus_id=clean(_text(gpu, "pci/pci_bus_id")) or clean(gpu.get("id")),
        product_name=clean(_text(gpu, "product_name")),
        product_architecture=clean(_text(gpu, "product_architecture")),
        uuid=clean(_text(gpu, "uuid")),
        serial_number=clean(_text(gpu, "serial")),
        minor_number=to_int(_text(gpu, "minor_number")),
        module_id=to_int(_text(gpu, "gpu_module_id") or _text(gpu, "platformInfo/module_id")),
        pcie_generation_current=to_int(_text(link, "pcie_gen/current_link_gen")),
        pcie_generation_max=to_int(_text(link, "pcie_gen/max_link_gen")),
        pcie_generation_device_current=to_int(_text(link, "pcie_gen/device_current_link_gen")),
        pcie_generation_device_max=to_int(_text(link, "pcie_gen/max_device_link_gen")),
        pcie_generation_host_max=to_int(_text(link, "pcie_gen/max_host_link_gen")),
        pcie_link_width_current=width_to_int(_text(link, "link_widths/current_link_width")),
        pcie_link_width_max=width_to_int(_text(link, "link_widths/max_link_width")),
        pcie_replays_since_reset=to_int(_text(gpu, "pci/replay_counter")),
        mig_mode_current=clean(_text(gpu, "mig_mode/current_mig")),
        mig_mode_pending=clean(_text(gpu, "mig_mode/pending_mig")),
        mig_device_count=len(gpu.findall("mig_devices/mig_device")),
        ecc_mode_current=clean(_text(gpu, "ecc_mode/current_ecc")),
        ecc_volatile=_ecc(gpu.find("ecc_errors/volatile")),
        ecc_aggregate=_ecc(gpu.find("ecc_errors/aggregate")),
        retired_pages_single_bit=to_int(
            _text(gpu, "retired_pages/multiple_single_bit_retirement/retired_count")
        ),
        retired_pages_double_bit=to_int(
            _text(gpu, "retired_pages/double_bit_retirement/retired_count")
        ),
        retired_pages_pending=to_bool(
            _text(gpu, "retired_pages/pending_blacklist")
            or _text(gpu, "retired_pages/pending_retirement")
        ),
        remapped_rows_correctable=to_int(_text(gpu, "remapped_rows/remapped_row_corr")),
        remapped_rows_uncorrectable=to_int(_text(gpu, "remapped_rows/remapped_row_unc")),
        remapped_rows_pending=to_bool(_text(gpu, "remapped_rows/remapped_row_pending")),
        remapped_rows_failure=to_bool(_text(gpu, "remapped_rows/remapped_row_failure")),
        fabric_state=clean(_text(gpu, "fabric/state")),
        fabric_status=clean(_text(gpu, "fabric/status")),
        fabric_clique_id=to_int(_text(gpu, "fabric/cliqueId")),
        fabric_cluster_uuid=clean(_text(gpu, "fabric/clusterUuid")),
        fabric_health_summary=clean(_text(gpu, "fabric/health/summary")),
        fabric_health=_fabric_health(gpu.find("fabric/health")),
    )


def _ecc(counts: ElementTree.Element | None) -> EccCounts | None:
    if counts is None:
        return None
    if counts.find("single_bit") is not None or counts.find("double_bit") is not None:
        # Drivers before the SRAM/DRAM split: single-bit errors are corrected, double-bit are not.
        return ecc_counts(
            None, [], _text(counts, "single_bit/total"), _text(counts, "double_bit/total")
        )
    return ecc_counts(
        _text(counts, "sram_correctable"),
        [
            _text(counts, "sram_uncorrectable"),
            _text(counts, "sram_uncorrectable_parity"),
            _text(counts, "sram_uncorrectable_secded"),
        ],
        _text(counts, "dram_correctable"),
        _text(counts, "dram_uncorrectable"),
    )


def _fabric_health(health: ElementTree.Element | None) -> dict[str, str]:
    if health is None:
        return {}
    shown = {child.tag: clean(child.text) for child in health if child.tag != "summary"}
    return {key: value for key, value in shown.items() if value is not None}
