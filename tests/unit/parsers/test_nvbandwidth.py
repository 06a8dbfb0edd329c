"""nvbandwidth v0.2 and v0.7 output, proven on the recorded corpus and an 8x H100 sample."""

from __future__ import annotations

from pathlib import Path

import pytest
from unit.parsers.corpus import corpus_text

from pytest_fabric.parsers.base import ParseError, ToolReportedError
from pytest_fabric.parsers.nvbandwidth import (
    min_pair_bandwidth,
    pair_bandwidths_gbytes_per_s,
    parse_nvbandwidth,
)

DATA = Path(__file__).resolve().parents[2] / "data" / "nvbandwidth"
D2D = "device_to_device_memcpy_read_ce"


def test_h800_v02_all_testcases() -> None:
    result = parse_nvbandwidth(corpus_text("nvbandwidth", "h800-8gpu-v0.2-all-testcases.txt"))
    assert result.version == "v0.2"
    assert (result.cuda_runtime_version, result.cuda_driver_version, result.driver_version) == (11080, 12000, "525.105.17")
    assert result.devices == {i: "NVIDIA H800" for i in range(8)}
    assert len(result.testcases) == 30
    h2d = result.testcase("host_to_device_memcpy_ce")
    assert h2d.matrix().rows == (0,) and h2d.matrix().cells[(0, 1)] == 55.30
    assert h2d.sum_gbytes_per_s == 442.52
    d2d = result.testcase(D2D)
    assert d2d.matrix().cells[(0, 1)] == 172.16
    assert d2d.matrix().cells[(0, 0)] is None
    assert d2d.sum_gbytes_per_s == 9643.22
    assert min_pair_bandwidth(result, D2D) == ((0, 4), 171.88)
    assert result.testcase("one_to_all_read_sm").sum_gbytes_per_s == 1222.39


def test_h800_v02_single_testcase() -> None:
    result = parse_nvbandwidth(corpus_text("nvbandwidth", "h800-8gpu-v0.2-d2d-read-ce.txt"))
    assert [t.name for t in result.testcases] == [D2D]
    pairs = pair_bandwidths_gbytes_per_s(result, D2D)
    assert len(pairs) == 56 and pairs[(0, 1)] == 172.32 and pairs[(7, 6)] == 172.07
    assert result.testcase(D2D).sum_gbytes_per_s == 9642.08


def test_dgx1_v07_na_for_non_peer_pairs() -> None:
    result = parse_nvbandwidth(corpus_text("nvbandwidth", "dgx1-8x-v100-v0.7-d2d-memcpy-read-ce.txt"))
    assert result.version == "v0.7"
    assert result.devices[0] == "Tesla V100-SXM2-32GB (00000000:06:00)"
    pairs = pair_bandwidths_gbytes_per_s(result, D2D)
    assert pairs[(0, 1)] == 24.25 and pairs[(0, 3)] == 48.48
    assert pairs[(0, 5)] is None
    assert sum(value is None for value in pairs.values()) == 24
    assert min_pair_bandwidth(result, D2D) == ((0, 1), 24.25)
    assert result.testcase(D2D).sum_gbytes_per_s == 1163.71


def test_dgx1_v07_bidirectional_read1_read2_total() -> None:
    result = parse_nvbandwidth(corpus_text("nvbandwidth", "dgx1-8x-v100-v0.7-d2d-bidir-read-sm.txt"))
    testcase = result.testcase("device_to_device_bidirectional_memcpy_read_sm")
    assert [m.label for m in testcase.matrices] == ["Read1", "Read2", "Total"]
    assert testcase.matrix("Read1").sum == 989.94
    assert testcase.matrix("Read1").cells[(0, 3)] == 41.25
    assert testcase.matrix().label == "Total"
    assert testcase.matrix().cells[(0, 3)] == 82.49
    assert testcase.sum_gbytes_per_s == 1979.87


def test_own_sample_h100_one_slow_pair() -> None:
    result = parse_nvbandwidth((DATA / "h100-8gpu-v0.7-d2d-read-ce-one-slow-pair-constructed.txt").read_text())
    assert min_pair_bandwidth(result, D2D) == ((3, 6), 212.37)
    slow = [pair for pair, value in pair_bandwidths_gbytes_per_s(result, D2D).items() if value is not None and value < 335]
    assert slow == [(3, 6)]


def test_error_without_testcase_is_reported() -> None:
    text = "nvbandwidth Version: v0.7\nERROR: CUDA_ERROR_NO_DEVICE\n"
    with pytest.raises(ToolReportedError, match="CUDA_ERROR_NO_DEVICE"):
        parse_nvbandwidth(text)


def test_waived_testcase() -> None:
    text = "nvbandwidth Version: v0.7\n\nRunning device_to_device_memcpy_read_ce.\nWaived.\n"
    assert parse_nvbandwidth(text).testcase(D2D).waived


@pytest.mark.parametrize("text", ["", "hello", "nvbandwidth Version: v0.7\n", "Running x.\nmemcpy CE GPU(row) -> GPU(column) bandwidth (GB/s)\n 0 1\n0 1.0 abc\n"])
def test_garbage_raises_parse_error(text: str) -> None:
    with pytest.raises(ParseError, match="nvbandwidth"):
        parse_nvbandwidth(text)


def test_truncations_only_raise_parse_error() -> None:
    text = (DATA / "h100-8gpu-v0.7-d2d-read-ce-one-slow-pair-constructed.txt").read_text()
    for cut in range(0, len(text), 23):
        try:
            parse_nvbandwidth(text[:cut])
        except ParseError:
            pass


@pytest.mark.parametrize("prefix", ["[1,0]<stdout>:", "[1,0]<stdout>: ", " 0: "])
def test_rank_prefixed_output_reads_like_the_plain_one(prefix: str) -> None:
    # A multi-node run under `mpirun --tag-output` or `srun -l` prefixes every line with its rank.
    text = (DATA / "h100-8gpu-v0.7-d2d-read-ce-one-slow-pair-constructed.txt").read_text()
    relayed = "\n".join(prefix + line if line else prefix.rstrip() for line in text.splitlines())
    assert parse_nvbandwidth(relayed) == parse_nvbandwidth(text)


def test_device_local_copy_v08_recorded() -> None:
    from pytest_fabric.parsers.nvbandwidth import device_local_bandwidths

    result = parse_nvbandwidth((DATA / "rtx3050-laptop-1gpu-v0.8-all-testcases-github-excerpt.txt").read_text())
    assert result.version == "v0.8"
    assert device_local_bandwidths(result) == {0: 84.33}
    assert result.devices == {0: "NVIDIA GeForce RTX 3050 Laptop GPU (00000000:01:00)"}


def test_device_local_copy_one_slow_gpu() -> None:
    from pytest_fabric.parsers.nvbandwidth import device_local_bandwidths

    result = parse_nvbandwidth((DATA / "h100-8gpu-v0.8-device-local-copy-gpu6-slow-constructed.txt").read_text())
    local = device_local_bandwidths(result)
    assert len(local) == 8 and local[6] == 1063.39 and local[0] == 1519.07
