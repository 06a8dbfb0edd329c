"""nvidia-smi nvlink --status, proven on the recorded corpus."""

from __future__ import annotations

import pytest
from unit.parsers.corpus import corpus_text

from pytest_fabric.parsers.base import ParseError, ToolReportedError
from pytest_fabric.parsers.nvidia_smi_nvlink import parse_nvidia_smi_nvlink


def test_a100_eight_gpus_twelve_links() -> None:
    status = parse_nvidia_smi_nvlink(corpus_text("nvidia-smi-nvlink", "a100-sxm4-80gb-8gpu-status.txt"))
    assert [g.index for g in status.gpus] == list(range(8))
    gpu = status.gpu(7)
    assert gpu.name == "NVIDIA A100-SXM4-80GB"
    assert gpu.uuid == "GPU-754035b4-4708-efcd-b261-623aea38bcad"
    assert len(gpu.active_links) == 12 and gpu.inactive_links == ()
    assert gpu.links[11].speed_gbytes_per_s == 25.0
    assert gpu.total_speed_gbytes_per_s == 300.0


def test_v100_six_links_fractional_speed() -> None:
    status = parse_nvidia_smi_nvlink(corpus_text("nvidia-smi-nvlink", "dgx1-8x-v100-6links-status.txt"))
    assert all(len(g.links) == 6 for g in status.gpus)
    assert status.gpu(0).links[0].speed_gbytes_per_s == pytest.approx(25.781)


def test_h100_eighteen_links() -> None:
    gpu = parse_nvidia_smi_nvlink(corpus_text("nvidia-smi-nvlink", "h100-80gb-18links-590.48.01.txt")).gpu(0)
    assert len(gpu.active_links) == 18
    assert gpu.total_speed_gbytes_per_s == pytest.approx(18 * 26.562)


def test_pcie_card_without_nvlink_is_a_valid_result() -> None:
    gpu = parse_nvidia_smi_nvlink(corpus_text("nvidia-smi-nvlink", "l40s-no-nvlink-595.80.txt")).gpu(0)
    assert gpu.name == "NVIDIA L40S"
    assert not gpu.nvlink_supported and gpu.links == () and not gpu.all_links_inactive


def test_all_links_inactive_is_flagged_not_raised() -> None:
    status = parse_nvidia_smi_nvlink(corpus_text("nvidia-smi-nvlink", "a100-sxm4-gpu6-all-links-inactive-ERROR.txt"))
    gpu = status.gpu(6)
    assert gpu.all_links_inactive and gpu.nvlink_supported
    assert gpu.active_links == ()


def test_inactive_links_and_partial_leading_block() -> None:
    text = "\t Link 10: 25 GB/s\n\t Link 11: 25 GB/s\nGPU 3: NVIDIA A100-SXM4-80GB (UUID: GPU-x)\n\t Link 0: 25 GB/s\n\t Link 1: <inactive>\n"
    status = parse_nvidia_smi_nvlink(text)
    assert [g.index for g in status.gpus] == [3]
    assert [link.link for link in status.gpu(3).inactive_links] == [1]


def test_other_nvml_errors_are_reported() -> None:
    with pytest.raises(ToolReportedError, match="GPU 0"):
        parse_nvidia_smi_nvlink("GPU 0: NVIDIA A100 (UUID: GPU-x)\nNVML: Unknown Error\n")


@pytest.mark.parametrize("text", ["", "Link 0: 25 GB/s\n", "GPU 0: X (UUID: y)\n Link 0: fast\n"])
def test_garbage_raises_parse_error(text: str) -> None:
    with pytest.raises(ParseError, match="nvidia-smi-nvlink"):
        parse_nvidia_smi_nvlink(text)
