"""Verdicts: a measurement against an expectation, with margins and messages people can act on."""

from __future__ import annotations

from decimal import Decimal

import pytest

from pytest_fabric.config.units import parse_quantity as q
from pytest_fabric.judge.verdict import Expectation, Measurement, Op, display_unit, judge


def _expect(op: Op, value: str, key: str = "inter_node.rdma_bandwidth.min", **kwargs: object) -> Expectation:
    layer, check, _ = key.split(".")
    return Expectation(layer, check, op, q(value), key, profile="test", **kwargs)  # type: ignore[arg-type]


def test_min_passes() -> None:
    verdict = judge("gpu01<->gpu02", Measurement(q("191.3 Gb/s")), _expect(Op.MIN, "180 Gb/s"))
    assert verdict.passed
    assert verdict.margin is not None and round(verdict.margin, 4) == Decimal("0.0628")
    assert verdict.message == "gpu01<->gpu02: measured 191.3 Gb/s (+6.3%), meets >= 180 Gb/s"


def test_min_fails_with_a_negative_margin() -> None:
    verdict = judge("gpu01<->gpu02", Measurement(q("157.7 Gb/s")), _expect(Op.MIN, "180 Gb/s"))
    assert not verdict.passed
    assert verdict.margin is not None and round(verdict.margin, 4) == Decimal("-0.1239")
    assert verdict.message == "gpu01<->gpu02: measured 157.7 Gb/s (-12.4%), does not meet >= 180 Gb/s"


def test_exactly_on_the_floor_passes() -> None:
    verdict = judge("a<->b", Measurement(q("25 GB/s")), _expect(Op.MIN, "200 Gb/s"))
    assert verdict.passed and verdict.margin == 0


def test_max_passes_and_fails() -> None:
    expectation = _expect(Op.MAX, "2.5 us", "inter_node.rdma_latency.max")
    ok = judge("a<->b", Measurement(q("1.52 us")), expectation)
    assert ok.passed and ok.margin is not None and ok.margin < 0
    assert ok.message == "a<->b: measured 1.52 us (-39.2%), meets <= 2.5 us"
    slow = judge("a<->b", Measurement(q("3 us")), expectation)
    assert not slow.passed and slow.margin == Decimal("0.2")
    assert slow.message == "a<->b: measured 3 us (+20.0%), does not meet <= 2.5 us"


def test_zero_ceiling_has_no_margin() -> None:
    expectation = _expect(Op.MAX, "0", "inter_node.error_counters.max")
    assert judge("gpu01", Measurement(q(0)), expectation).passed
    verdict = judge("gpu01", Measurement(q(3)), expectation)
    assert not verdict.passed and verdict.margin is None
    assert verdict.message == "gpu01: measured 3, does not meet <= 0"


def test_line_share_resolved_against_the_port_rate() -> None:
    expectation = _expect(Op.MIN, "90% line")
    verdict = judge("gpu01<->gpu02", Measurement(q("170 Gb/s"), line_rate=q("200 Gb/s")), expectation)
    assert not verdict.passed
    assert verdict.expected_value == q("180 Gb/s")
    assert "measured 170 Gb/s (-5.6%)" in verdict.message
    assert "180 Gb/s" in verdict.message and "200 Gb/s" in verdict.message and "90% line" in verdict.message
    assert judge("x", Measurement(q("181 Gb/s"), line_rate=q("200 Gb/s")), expectation).passed


def test_line_share_against_a_port_rate_in_bytes() -> None:
    verdict = judge("x", Measurement(q("23 GB/s"), line_rate=q("25 GB/s")), _expect(Op.MIN, "90% line"))
    assert verdict.passed  # 184 Gb/s >= 180 Gb/s
    assert verdict.expected_value == q("180 Gb/s")


def test_line_share_without_a_line_rate_is_a_clear_error() -> None:
    with pytest.raises(ValueError) as excinfo:
        judge("gpu01<->gpu02", Measurement(q("170 Gb/s")), _expect(Op.MIN, "90% line"))
    message = str(excinfo.value)
    assert "inter_node.rdma_bandwidth.min" in message and "90% line" in message
    assert "no line rate for gpu01<->gpu02" in message and "180 Gb/s" in message


def test_absent_fails_with_its_reason() -> None:
    verdict = judge(
        "gpu01:/mnt/lustre",
        Measurement.absent("/mnt/lustre is not mounted"),
        _expect(Op.MIN, "2 GB/s", "storage.sequential_read.min"),
    )
    assert not verdict.passed and verdict.margin is None
    assert verdict.message == "gpu01:/mnt/lustre: /mnt/lustre is not mounted"
    assert verdict.measured.missing == "/mnt/lustre is not mounted"


def test_unit_as_the_author_wrote_it() -> None:
    verdict = judge("gpu01", Measurement(q("1840 Gb/s")), _expect(Op.MIN, "235 GB/s", "intra_node.nvlink_bandwidth.min"))
    assert verdict.message == "gpu01: measured 230 GB/s (-2.1%), does not meet >= 235 GB/s"
    verdict = judge("gpu01", Measurement(q("0.8 ms")), _expect(Op.MAX, "100 ms", "egress.dns_resolve.max"))
    assert verdict.message == "gpu01: measured 0.8 ms (-99.2%), meets <= 100 ms"


def test_display_unit() -> None:
    assert display_unit(_expect(Op.MIN, "235 GB/s")) == "GB/s"
    assert display_unit(_expect(Op.MIN, "200Gbps")) == "Gbps"
    assert display_unit(_expect(Op.MIN, "90% line")) == "Gb/s"
    assert display_unit(_expect(Op.MAX, "2.5 us")) == "us"
    assert display_unit(_expect(Op.MIN, "4096")) == ""
    text = Expectation("intra_node", "gpu_model", Op.CONTAINS, "A100", "intra_node.gpu_model.value")
    assert display_unit(text) is None


def test_source_is_named_when_a_check_fails() -> None:
    expectation = _expect(Op.MIN, "180 Gb/s", source="azurehpc conf")
    assert judge("x", Measurement(q("190 Gb/s")), expectation).message.endswith("meets >= 180 Gb/s")
    failed = judge("x", Measurement(q("150 Gb/s"), detail="median of 3 runs"), expectation)
    assert failed.message.endswith("; median of 3 runs [expected value from: azurehpc conf]")


def test_equal_and_contains() -> None:
    mtu = _expect(Op.EQUAL, "4096", "inter_node.mtu.equal")
    assert judge("gpu01", Measurement(q(4096)), mtu).passed
    assert not judge("gpu01", Measurement(q(1500)), mtu).passed
    link = Expectation("inter_node", "link_layer", Op.CONTAINS, "infiniband", "inter_node.link_layer.value")
    assert judge("gpu01", Measurement("InfiniBand"), link).passed
    assert not judge("gpu01", Measurement("Ethernet"), link).passed
    model = Expectation("intra_node", "gpu_model", Op.CONTAINS, "A100", "intra_node.gpu_model.value")
    assert judge("gpu01", Measurement("NVIDIA A100-SXM4-80GB"), model).passed


def test_named_bound_from_a_measurement_with_several() -> None:
    measurement = Measurement(q("1.6 us"), bounds={"p99": q("4.5 us")})
    assert judge("a<->b", measurement, _expect(Op.MAX, "2 us", "inter_node.rdma_latency.max")).passed
    p99 = judge("a<->b", measurement, _expect(Op.MAX, "4.2 us", "inter_node.rdma_latency.p99"))
    assert not p99.passed and "measured 4.5 us" in p99.message


def test_min_max_need_quantities() -> None:
    with pytest.raises(TypeError, match="needs quantities"):
        judge("x", Measurement("fast"), _expect(Op.MIN, "1 Gb/s"))


def test_dimension_mismatch_is_not_a_silent_pass() -> None:
    with pytest.raises(ValueError, match="cannot compare"):
        judge("x", Measurement(q("1 us")), _expect(Op.MIN, "1 Gb/s"))
