"""CUDA samples bandwidthTest, proven on the recorded corpus."""

from __future__ import annotations

import pytest
from unit.parsers.corpus import corpus_text

from pytest_fabric.parsers.base import ParseError
from pytest_fabric.parsers.cuda_bandwidth_test import BandwidthSample, parse_cuda_bandwidth_test


def test_a100_quick_mode_tab_separated() -> None:
    result = parse_cuda_bandwidth_test(corpus_text("cuda-bandwidthTest", "a100-sxm4-40gb-quick.txt"))
    assert result.devices == {0: "NVIDIA A100-SXM4-40GB"}
    assert result.mode == "quick" and result.passed is True
    assert result.samples == (
        BandwidthSample("H2D", "pinned", 32000000, 12.3),
        BandwidthSample("D2H", "pinned", 32000000, 13.2),
        BandwidthSample("D2D", "pinned", 32000000, 1157.5),
    )
    assert result.bandwidth_gbytes_per_s("H2D") == 12.3


def test_rtx2080ti_quick_mode_space_separated() -> None:
    result = parse_cuda_bandwidth_test(corpus_text("cuda-bandwidthTest", "rtx2080ti-quick.txt"))
    assert result.bandwidth_gbytes_per_s("D2H") == 13.2
    assert result.bandwidth_gbytes_per_s("d2d", size_bytes=32000000) == 518.9


def test_v100_shmoo_csv() -> None:
    result = parse_cuda_bandwidth_test(corpus_text("cuda-bandwidthTest", "v100-pcie-32gb-h2d-shmoo-csv.txt"))
    assert result.mode == "shmoo" and result.passed
    assert len(result.samples) == 81
    assert result.samples[0] == BandwidthSample("H2D", "pinned", 1000, 0.4)
    assert result.bandwidth_gbytes_per_s("H2D") == 12.4  # at the largest size, 68000000 bytes
    with pytest.raises(KeyError):
        result.bandwidth_gbytes_per_s("D2H")


def test_old_mbytes_per_s_is_converted() -> None:
    text = " Host to Device Bandwidth, 1 Device(s)\n PINNED Memory Transfers\n   Transfer Size (Bytes)\tBandwidth(MB/s)\n   33554432\t\t11798.9\n"
    sample = parse_cuda_bandwidth_test(text).samples[0]
    assert sample.bandwidth_gbytes_per_s == pytest.approx(11798.9 * 2**20 / 1e9)


@pytest.mark.parametrize("text", ["", "[CUDA Bandwidth Test] - Starting...\n", "Result = FAIL\n"])
def test_garbage_raises_parse_error(text: str) -> None:
    with pytest.raises(ParseError, match="cuda-bandwidthTest"):
        parse_cuda_bandwidth_test(text)
