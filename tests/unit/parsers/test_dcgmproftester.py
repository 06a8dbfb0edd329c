"""dcgmproftester -t 1004 output: DCGM 2.x, 3.x and 3.3 layouts, recorded and constructed."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_fabric.parsers.base import ToolReportedError, UnrecognizedOutput
from pytest_fabric.parsers.dcgmproftester import parse_dcgmproftester

DATA = Path(__file__).resolve().parents[2] / "data" / "dcgmproftester"


def test_dcgm3_user_guide_a100() -> None:
    result = parse_dcgmproftester((DATA / "a100-1gpu-dcgm3-t1004-nvidia-user-guide.txt").read_text())
    (worker,) = result.workers
    assert (worker.gpu, worker.slice, worker.metric, worker.bus_id) == (0, 0, "TensorEngineActive", "00000000:00:04.0")
    assert len(worker.gflops) == 10 and worker.gflops[0] == 250362.2
    assert worker.median_tflops == pytest.approx(252.89, abs=0.01)
    assert "CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: 108" in result.skipped


def test_dcgm33_scientific_notation_and_trailing_dot() -> None:
    result = parse_dcgmproftester((DATA / "a100-pcie-40gb-dcgm3.3.5-t1004-d30-blog-excerpt.txt").read_text())
    (worker,) = result.workers
    assert worker.gflops == (1.78e5, 1.96e5, 1.97e5, 1.89e5, 1.92e5, 1.94e5, 1.94e5, 1.90e5)
    assert worker.bus_id is None  # the excerpt stops before the worker's Message line


def test_dcgm2_without_worker_prefix_is_gpu_0() -> None:
    result = parse_dcgmproftester((DATA / "t4-dcgm2.0-t1004-no-worker-prefix-blog-excerpt.txt").read_text())
    assert list(result.by_gpu()) == [0]
    assert result.by_gpu()[0].gflops == (27605.2, 28697.6)


def test_eight_gpus_one_slow_named_by_bus_id() -> None:
    result = parse_dcgmproftester((DATA / "h100-8gpu-dcgm3.3-t1004-gpu3-slow-constructed.txt").read_text())
    by_gpu = result.by_gpu()
    assert sorted(by_gpu) == list(range(8))
    assert by_gpu[3].bus_id == "00000000:5D:00.0"
    assert by_gpu[3].median_tflops / by_gpu[0].median_tflops == pytest.approx(0.7, abs=0.01)


def test_mig_workers_keep_their_slices() -> None:
    text = (
        "Worker 0:0[1004]: TensorEngineActive: generated ???, dcgm { GPU: 0.000, GI: 0.000, CI: 0.000 } (102659.5 gflops)\n"
        "Worker 0:1[1004]: TensorEngineActive: generated ???, dcgm { GPU: 0.000, GI: 0.000, CI: 0.000 } (102659.8 gflops)\n"
    )
    result = parse_dcgmproftester(text)
    assert [(w.gpu, w.slice) for w in result.workers] == [(0, 0), (0, 1)]
    assert list(result.by_gpu()) == [0]


def test_an_error_without_readings_is_the_tools_own_words() -> None:
    with pytest.raises(ToolReportedError, match="Error: unable to"):
        parse_dcgmproftester("Error: unable to establish a connection to the specified host engine.\n")


def test_no_reading_at_all() -> None:
    with pytest.raises(UnrecognizedOutput, match="gflops"):
        parse_dcgmproftester("Skipping CreateDcgmGroups() since DCGM validation is disabled\n")
