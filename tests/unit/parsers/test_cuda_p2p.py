"""CUDA samples p2pBandwidthLatencyTest, proven on the recorded corpus."""

from __future__ import annotations

import pytest
from unit.parsers.corpus import corpus_text

from pytest_fabric.parsers.base import ParseError
from pytest_fabric.parsers.cuda_p2p import parse_cuda_p2p


def test_two_pcie_gpus_cannot_access_peer() -> None:
    result = parse_cuda_p2p(corpus_text("cuda-p2pBandwidthLatencyTest", "2x-rtx2080ti-pcie-p2p-cannot-access.txt"))
    assert result.devices == {0: "NVIDIA GeForce RTX 2080 Ti", 1: "NVIDIA GeForce RTX 2080 Ti"}
    assert result.peer_access == {(0, 1): False, (1, 0): False}
    assert result.connectivity[(0, 1)] is False and result.connectivity[(0, 0)] is True
    assert result.pairs_without_peer_access() == [(0, 1), (1, 0)]
    assert result.unidirectional_p2p_disabled_gbytes_per_s[(0, 1)] == 5.71
    assert result.unidirectional_p2p_enabled_gbytes_per_s[(1, 0)] == 5.72
    assert result.bidirectional_p2p_disabled_gbytes_per_s[(0, 1)] == 6.12
    assert result.bidirectional_p2p_enabled_gbytes_per_s[(1, 1)] == 534.01
    assert result.latency_gpu_p2p_disabled_us[(0, 1)] == 14.76
    assert result.latency_cpu_p2p_disabled_us[(1, 0)] == 10.48
    assert result.latency_gpu_p2p_enabled_us[(1, 0)] == 13.63
    assert result.latency_cpu_p2p_enabled_us[(1, 1)] == 3.27


def test_dgx1_starts_mid_list_with_crlf() -> None:
    result = parse_cuda_p2p(corpus_text("cuda-p2pBandwidthLatencyTest", "dgx1-8x-v100-partial-start.txt"))
    assert result.devices == {}
    assert len(result.peer_access) == 14
    assert result.peer_access[(6, 2)] is True and result.peer_access[(7, 0)] is False
    assert len(result.connectivity) == 64
    missing = result.pairs_without_peer_access()
    assert (0, 5) in missing and (0, 1) not in missing and len(missing) == 24
    assert result.unidirectional_p2p_enabled_gbytes_per_s[(0, 3)] == 48.48
    assert result.unidirectional_p2p_enabled_gbytes_per_s[(0, 5)] == 8.68
    assert result.bidirectional_p2p_enabled_gbytes_per_s[(0, 3)] == 96.84
    assert all(len(m) == 64 for m in (result.latency_gpu_p2p_enabled_us, result.latency_cpu_p2p_enabled_us))
    assert result.latency_gpu_p2p_enabled_us[(0, 1)] == 1.62
    assert result.latency_cpu_p2p_disabled_us[(7, 7)] == 2.67


@pytest.mark.parametrize("text", ["", "hello\n", "   D\\D     0      1\n     0 1.0 2.0\n", "P2P Connectivity Matrix\n   D\\D 0 1\n 0 1\n"])
def test_garbage_raises_parse_error(text: str) -> None:
    with pytest.raises(ParseError, match="cuda-p2pBandwidthLatencyTest"):
        parse_cuda_p2p(text)
