"""Single-node NCCL (gpu.node_allreduce) against canned nccl-tests output: wrong results fail the node, broken runs error."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_fabric.config.inventory import Node
from pytest_fabric.config.units import parse_quantity
from pytest_fabric.judge.verdict import Expectation, Op, judge
from pytest_fabric.probes import gpu
from pytest_fabric.probes.base import MeasurementError
from pytest_fabric.run.cluster import NodeHandle
from pytest_fabric.transport.base import CommandFailed
from pytest_fabric.transport.mock import Answer, CannedCommand, MockTransport
from pytest_fabric.transport.pool import ConnectionPool

DATA = Path(__file__).resolve().parents[1] / "data" / "nccl-tests"
WRONG = DATA / "all_reduce_perf-1node-wrong-results-rank-failures-constructed.txt"
SIZE = 16777216  # the row with the wrong results
FLOOR = Expectation("intra_node", "nccl_allreduce", Op.MIN, parse_quantity("10 GB/s"), "intra_node.nccl_allreduce.min")


def node(answers: dict[str, Answer]) -> tuple[NodeHandle, MockTransport]:
    transport = MockTransport("gpu-b07", answers)
    return NodeHandle(Node(name="gpu-b07", host="10.0.0.7"), ConnectionPool(lambda _name: transport)), transport


def test_wrong_results_fail_the_node_not_error() -> None:
    # nccl-tests exits 1 on wrong results, and ranks print their own failure lines after the table.
    handle, _ = node({r"all_reduce_perf": CannedCommand(stdout=WRONG.read_text(), exit_code=1)})
    measured = gpu.node_allreduce(handle, size_bytes=SIZE, gpus=4)
    assert measured.missing is not None
    assert "all_reduce over 4 GPUs of gpu-b07 returned wrong results" in measured.missing
    assert "2086 wrong elements (1043 at 16777216 B out-of-place, 1043 at 16777216 B in-place)" in measured.missing
    assert "'Out of bounds values : 2 FAILED'" in measured.missing and "exit code 1" in measured.missing
    assert "Test CUDA failure common.cu:1156" in measured.missing  # what the ranks said, for the diagnosis
    verdict = judge("gpu-b07", measured, FLOOR)
    # 30.64 GB/s clears the 10 GB/s floor, and the node still fails on the corruption.
    assert not verdict.passed and verdict.message.startswith("gpu-b07: all_reduce over 4 GPUs")
    assert measured.value.display("GB/s") == "30.64 GB/s"  # type: ignore[union-attr]


def test_clean_run_checks_results_and_passes() -> None:
    text = WRONG.read_text().replace("   1043", "      0").replace("2 FAILED", "0 OK")
    text = "\n".join(line for line in text.splitlines() if "failure" not in line)
    handle, transport = node({r"all_reduce_perf": text})
    measured = gpu.node_allreduce(handle, size_bytes=SIZE, gpus=4)
    assert measured.missing is None and judge("gpu-b07", measured, FLOOR).passed
    assert transport.calls[-1].endswith(" -c 1"), transport.calls[-1]


def test_non_zero_exit_without_wrong_results_is_an_error() -> None:
    text = WRONG.read_text().replace("   1043", "      0").replace("2 FAILED", "0 OK")
    handle, _ = node({r"all_reduce_perf": CannedCommand(stdout=text, exit_code=1)})
    with pytest.raises(CommandFailed) as raised:
        gpu.node_allreduce(handle, size_bytes=SIZE, gpus=4)
    assert raised.value.node == "gpu-b07" and "exited with code 1" in str(raised.value)


def test_failure_lines_beside_a_clean_table_are_an_error_even_on_exit_0() -> None:
    text = WRONG.read_text().replace("   1043", "      0").replace("2 FAILED", "0 OK")
    handle, _ = node({r"all_reduce_perf": text})
    with pytest.raises(MeasurementError, match="Test CUDA failure common.cu:1156"):
        gpu.node_allreduce(handle, size_bytes=SIZE, gpus=4)
