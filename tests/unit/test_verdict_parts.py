"""A node's GPUs (ports) in one test: each part judged on its own, the record shows the one closest to its limit."""

from __future__ import annotations

import pytest

from pytest_fabric.config.units import parse_quantity as q
from pytest_fabric.judge.verdict import Expectation, Measurement, Op, judge
from pytest_fabric.plugin import _closest_to_limit


def _expect(op: Op, value: str, key: str) -> Expectation:
    layer, check, _ = key.split(".")
    return Expectation(layer, check, op, q(value), key, profile="test")


def test_of_parts_keeps_each_part_and_the_node_evidence_once() -> None:
    from pytest_fabric.transport.results import CommandResult

    ibstat = CommandResult(node="n1", command="ibstat", exit_code=0, stdout="", stderr="", duration_s=0.1)
    parts = [(f"n1:port{i}", Measurement(q("200 Gb/s"), evidence=(ibstat,))) for i in range(4)]
    whole = Measurement.of_parts(parts)
    assert [name for name, _ in whole.parts] == ["n1:port0", "n1:port1", "n1:port2", "n1:port3"]
    assert whole.evidence == (ibstat,)
    with pytest.raises(ValueError):
        Measurement.of_parts([])


def test_the_record_shows_the_part_closest_to_its_floor_and_ceiling() -> None:
    """Fails on showing the first verdict: gpu0's comfortable margin stood for a node whose gpu5 barely passed."""
    floor = _expect(Op.MIN, "48 GB/s", "intra_node.host_to_device_bandwidth.min")
    values = {0: "55 GB/s", 5: "48.5 GB/s", 7: "60 GB/s"}
    verdicts = [judge(f"n1:gpu{i}", Measurement(q(v)), floor) for i, v in values.items()]
    assert _closest_to_limit(verdicts).message.startswith("n1:gpu5:")  # type: ignore[union-attr]
    ceiling = _expect(Op.MAX, "4.2 us", "inter_node.rdma_latency.p99")
    latencies = [judge(f"n1:port{i}", Measurement(q(v)), ceiling) for i, v in enumerate(["2 us", "4.1 us", "1 us"])]
    assert _closest_to_limit(latencies).message.startswith("n1:port1:")  # type: ignore[union-attr]
    failing = [judge("n1:gpu1", Measurement(q("40 GB/s")), floor), judge("n1:gpu2", Measurement(q("20 GB/s")), floor)]
    assert _closest_to_limit(failing).message.startswith("n1:gpu2:")  # type: ignore[union-attr]
    missing = judge("n1:gpu7", Measurement.absent("gpu7 is missing"), floor)
    assert _closest_to_limit([*failing, missing]) is missing  # a GPU that is not there outranks a slow one
    assert _closest_to_limit([]) is None
