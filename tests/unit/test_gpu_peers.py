"""judge/gpu_peers.py: a node's GPUs against a floor and against each other; reasons under load."""

from __future__ import annotations

from collections import Counter

from pytest_fabric.judge.gpu_peers import GpuFigure, judge_figures, judge_reasons

HEALTHY = [1519.07, 1518.93, 1519.07, 1519.60, 1519.13, 1518.86, 1519.13, 1519.33]  # 8 H100s, recorded


def figures(values: list[float | None]) -> list[GpuFigure]:
    return [GpuFigure(i, f"00000000:{10 + i:02X}:00.0", v) for i, v in enumerate(values)]


def test_recorded_healthy_node_passes_its_floor_and_peers() -> None:
    judged = judge_figures(figures(list(HEALTHY)), floor=1340.0, max_below_peers=0.10, unit="GB/s")
    assert judged.ok and len(judged.lines) == 8


def test_one_gpu_30_percent_below_its_siblings_fails_by_bus_id() -> None:
    values: list[float | None] = list(HEALTHY)
    values[6] = HEALTHY[6] * 0.7
    judged = judge_figures(figures(values), floor=None, max_below_peers=0.10, unit="GB/s")
    assert len(judged.failures) == 1
    assert judged.failures[0].startswith("GPU6 (00000000:10:00.0): 1063 GB/s")
    assert "30% below the median of the node's other GPUs" in judged.failures[0]


def test_below_the_floor_fails_even_when_all_agree() -> None:
    judged = judge_figures(figures([500.0] * 4), floor=692.0, max_below_peers=0.10, unit="TFLOP/s")
    assert len(judged.failures) == 4 and "below the floor of 692 TFLOP/s" in judged.failures[0]


def test_a_gpu_not_measured_fails() -> None:
    judged = judge_figures(figures([800.0, None]), floor=None, max_below_peers=0.10, unit="TFLOP/s")
    assert judged.failures == ("GPU1 (00000000:0B:00.0): not measured",)


def test_reasons_fail_hw_slowdown_and_report_power_cap() -> None:
    reasons = {0: Counter({"sw_power_cap": 5}), 5: Counter({"sw_power_cap": 5, "hw_slowdown": 4})}
    judged = judge_reasons(reasons, {5: "00000000:AB:00.0"}, 5,
                           failing=("hw_slowdown", "hw_thermal_slowdown", "hw_power_brake_slowdown", "sw_thermal_slowdown"))
    assert judged.failures == ("GPU5 (00000000:AB:00.0): HW Slowdown in 4 of 5 samples under load",)
    assert "GPU0: SW Power Cap in 5 of 5 samples (reported)" in judged.lines
