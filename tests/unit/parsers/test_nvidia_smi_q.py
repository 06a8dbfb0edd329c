"""nvidia-smi -q text, proven on the recorded corpus."""

from __future__ import annotations

from pathlib import Path

import pytest
from unit.parsers.corpus import corpus_text

from pytest_fabric.parsers.base import ParseError, ToolReportedError
from pytest_fabric.parsers.nvidia_smi_q import parse_nvidia_smi_q


def test_h100_eight_gpus() -> None:
    report = parse_nvidia_smi_q(corpus_text("nvidia-smi-q", "h100-80gb-hbm3-8gpu-535.183.01.txt"))
    assert report.driver_version == "535.183.01"
    assert report.cuda_version == "12.2"
    assert report.attached_gpus == 8
    assert len(report.gpus) == 8
    gpu0 = report.gpus[0]
    assert gpu0.product_name == "NVIDIA H100 80GB HBM3"
    assert gpu0.bus_id == "00000000:53:00.0"
    assert (gpu0.pcie_generation_current, gpu0.pcie_generation_max) == (5, 5)
    assert (gpu0.pcie_link_width_current, gpu0.pcie_link_width_max) == (16, 16)
    assert gpu0.pcie_generation_host_max is None  # "N/A"
    assert gpu0.pcie_replays_since_reset == 120
    assert gpu0.mig_mode_current == "Disabled" and not gpu0.mig_enabled
    assert report.gpus[7].bus_id == "00000000:CA:00.0"
    assert report.gpu("00000000:ca:00.0").index == 7
    assert all(g.pcie_link_width_current == 16 for g in report.gpus)


def test_h800_single_gpu_of_eight_with_host_max() -> None:
    report = parse_nvidia_smi_q(corpus_text("nvidia-smi-q", "h800-gpu0-525.105.17.txt"))
    assert report.attached_gpus == 8 and len(report.gpus) == 1
    gpu = report.gpus[0]
    assert gpu.product_name == "NVIDIA H800"
    assert gpu.pcie_generation_device_current == 5
    assert gpu.pcie_generation_device_max == 5
    assert gpu.pcie_generation_host_max == 5
    assert gpu.module_id == 5
    assert gpu.uuid == "GPU-34bf77d1-c686-6821-79a8-32d326c5039c"


def test_a10_gen4_and_mig_not_applicable() -> None:
    report = parse_nvidia_smi_q(corpus_text("nvidia-smi-q", "a10-535.129.03.txt"))
    gpu = report.gpus[0]
    assert gpu.product_name == "NVIDIA A10"
    assert (gpu.pcie_generation_current, gpu.pcie_generation_max, gpu.pcie_link_width_current) == (
        4,
        4,
        16,
    )
    assert gpu.mig_mode_current is None


def test_newer_driver_wider_columns() -> None:
    report = parse_nvidia_smi_q(
        corpus_text("nvidia-smi-q", "h100-80gb-hbm3-1gpu-590.48.01-under-load.txt")
    )
    assert (report.driver_version, report.cuda_version) == ("590.48.01", "13.1")
    gpu = report.gpus[0]
    assert gpu.bus_id == "00000000:00:09.0"
    assert gpu.pcie_generation_current == 5 and gpu.pcie_link_width_max == 16
    assert gpu.pcie_replays_since_reset == 9
    assert gpu.module_id == 7  # spelled "Module Id" by this driver


def test_tool_failure_is_reported() -> None:
    with pytest.raises(ToolReportedError, match="NVIDIA-SMI has failed"):
        parse_nvidia_smi_q(
            "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.\n"
        )


@pytest.mark.parametrize(
    "text", ["", "hello\n", "==============NVSMI LOG==============\nDriver Version : 1\n"]
)
def test_garbage_raises_parse_error(text: str) -> None:
    with pytest.raises(ParseError, match="nvidia-smi-q"):
        parse_nvidia_smi_q(text)


# Recent drivers (issue 20): ECC errors, retired pages, remapped rows and the NVLink fabric state.

DATA = Path(__file__).resolve().parents[2] / "data" / "nvidia-smi-q"
H200 = "h200-2of8gpu-570-remap-pending-ecc-fabric-in-progress-constructed.txt"


def test_recorded_590_fabric_completed_and_zero_ecc() -> None:
    (gpu,) = parse_nvidia_smi_q(
        corpus_text("nvidia-smi-q", "h100-80gb-hbm3-1gpu-590.48.01-under-load.txt")
    ).gpus
    assert gpu.ecc_mode_current == "Enabled"
    assert gpu.ecc_volatile is not None and (
        gpu.ecc_volatile.uncorrectable,
        gpu.ecc_volatile.correctable,
    ) == (0, 0)
    assert (
        gpu.remapped_rows_uncorrectable,
        gpu.remapped_rows_pending,
        gpu.remapped_rows_failure,
    ) == (0, False, False)
    assert (
        gpu.retired_pages_single_bit is None and gpu.retired_pages_pending is None
    )  # "N/A" on HBM3 (rows remap)
    assert (gpu.fabric_state, gpu.fabric_status, gpu.fabric_clique_id) == (
        "Completed",
        "Success",
        0,
    )
    assert gpu.fabric_cluster_uuid == "00000000-0000-0000-0000-000000000000"
    assert gpu.fabric_health == {} and gpu.fabric_health_summary is None  # every health field N/A
    assert gpu.memory_faults == () and gpu.fabric_problem is None


def test_recorded_a10_with_a_pending_row_remap() -> None:
    (gpu,) = parse_nvidia_smi_q(corpus_text("nvidia-smi-q", "a10-535.129.03.txt")).gpus
    assert (gpu.remapped_rows_uncorrectable, gpu.remapped_rows_pending) == (4, True)
    assert gpu.memory_faults == ("row remapping pending (reset the GPU)",)


def test_h200_remap_pending_volatile_uncorrectable_and_fabric_in_progress() -> None:
    report = parse_nvidia_smi_q((DATA / H200).read_text())
    assert report.driver_version == "570.172.08" and len(report.gpus) == 2
    good, bad = report.gpus
    assert (
        good.ecc_aggregate is not None
        and good.ecc_aggregate.correctable == 15
        and good.memory_faults == ()
    )
    assert (good.fabric_state, good.fabric_status, good.fabric_clique_id) == (
        "Completed",
        "Success",
        32766,
    )
    assert good.fabric_health_summary == "Healthy" and good.fabric_health["Bandwidth"] == "Full"
    assert good.fabric_problem is None
    # SRAM SEC-DED and DRAM uncorrectable errors since the driver loaded, a remap waiting for a reset.
    assert bad.ecc_volatile is not None and (
        bad.ecc_volatile.sram_uncorrectable,
        bad.ecc_volatile.dram_uncorrectable,
    ) == (1, 2)
    assert bad.memory_faults == (
        "3 uncorrectable volatile ECC error(s) (SRAM 1, DRAM 2)",
        "row remapping pending (reset the GPU)",
    )
    assert bad.fabric_problem == "NVLink fabric state In Progress, status N/A"
    assert (
        report.skipped == ("WARNING: infoROM is corrupted at gpu 0000:1B:00.0",)
        and report.skipped_count == 1
    )


def _with_fabric(excerpt: str) -> str:
    """A one-GPU log around a recorded Fabric section (the threads quote only that section)."""
    lines = [line for line in excerpt.splitlines() if line.strip()]
    shift = 4 - (len(lines[0]) - len(lines[0].lstrip()))
    body = "\n".join(" " * shift + line for line in lines)
    return f"==============NVSMI LOG==============\n\nAttached GPUs : 1\nGPU 00000000:18:00.0\n    Product Name : NVIDIA H100 80GB HBM3\n{body}\n"


def test_recorded_fabric_in_progress_580() -> None:
    text = _with_fabric(
        (DATA / "fabric-in-progress-580.159.04-gpu-operator-issue2511-excerpt.txt").read_text()
    )
    (gpu,) = parse_nvidia_smi_q(text).gpus
    assert (gpu.fabric_state, gpu.fabric_status, gpu.fabric_clique_id, gpu.fabric_cluster_uuid) == (
        "In Progress",
        None,
        None,
        None,
    )
    assert gpu.fabric_problem == "NVLink fabric state In Progress, status N/A"


def test_recorded_fabric_completed_with_insufficient_resources() -> None:
    text = _with_fabric(
        (
            DATA / "fabric-completed-insufficient-resources-azhpc-images-pr506-excerpt.txt"
        ).read_text()
    )
    (gpu,) = parse_nvidia_smi_q(text).gpus
    assert gpu.fabric_problem == "NVLink fabric state Completed, status Insufficient Resources"


def test_old_single_and_double_bit_layout() -> None:
    text = (
        "==============NVSMI LOG==============\nGPU 00000000:04:00.0\n    ECC Errors\n        Volatile\n"
        "            Single Bit\n                Device Memory : 5\n                Total : 5\n"
        "            Double Bit\n                Device Memory : 1\n                Total : 1\n"
        "    Retired Pages\n        Single Bit ECC : 2\n        Double Bit ECC : 1\n        Pending : Yes\n"
    )
    (gpu,) = parse_nvidia_smi_q(text).gpus
    assert gpu.ecc_volatile is not None and (
        gpu.ecc_volatile.correctable,
        gpu.ecc_volatile.uncorrectable,
    ) == (5, 1)
    assert (
        gpu.retired_pages_single_bit,
        gpu.retired_pages_double_bit,
        gpu.retired_pages_pending,
    ) == (2, 1, True)
    assert gpu.memory_faults == (
        "1 uncorrectable volatile ECC error(s) (DRAM 1)",
        "page retirement pending (reset the GPU)",
    )
