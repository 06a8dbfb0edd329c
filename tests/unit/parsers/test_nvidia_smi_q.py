"""nvidia-smi -q text, proven on the recorded corpus."""

from __future__ import annotations

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
    assert (gpu.pcie_generation_current, gpu.pcie_generation_max, gpu.pcie_link_width_current) == (4, 4, 16)
    assert gpu.mig_mode_current is None


def test_newer_driver_wider_columns() -> None:
    report = parse_nvidia_smi_q(corpus_text("nvidia-smi-q", "h100-80gb-hbm3-1gpu-590.48.01-under-load.txt"))
    assert (report.driver_version, report.cuda_version) == ("590.48.01", "13.1")
    gpu = report.gpus[0]
    assert gpu.bus_id == "00000000:00:09.0"
    assert gpu.pcie_generation_current == 5 and gpu.pcie_link_width_max == 16
    assert gpu.pcie_replays_since_reset == 9
    assert gpu.module_id == 7  # spelled "Module Id" by this driver


def test_tool_failure_is_reported() -> None:
    with pytest.raises(ToolReportedError, match="NVIDIA-SMI has failed"):
        parse_nvidia_smi_q("NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.\n")


@pytest.mark.parametrize("text", ["", "hello\n", "==============NVSMI LOG==============\nDriver Version : 1\n"])
def test_garbage_raises_parse_error(text: str) -> None:
    with pytest.raises(ParseError, match="nvidia-smi-q"):
        parse_nvidia_smi_q(text)
