"""Clock-event (throttle) reasons from nvidia-smi --query-gpu, both field spellings."""

from __future__ import annotations

from pathlib import Path

from pytest_fabric.parsers.nvidia_smi_clock_events import parse_clock_events, query_fields

DATA = Path(__file__).resolve().parents[2] / "data" / "nvidia-smi-query-gpu"


def test_recorded_idle_h100_reads_gpu_idle_from_names_and_mask() -> None:
    (gpu,) = parse_clock_events((DATA / "h100-80gb-all-fields-590.48.01-idle.csv").read_text())
    assert (gpu.index, gpu.bus_id, gpu.active) == (0, "00000000:00:09.0", frozenset({"gpu_idle"}))


def test_hw_slowdown_on_one_gpu_under_power_cap() -> None:
    gpus = parse_clock_events((DATA / "h100-8gpu-clock-events-gpu5-hw-slowdown-power-cap-constructed.csv").read_text())
    assert len(gpus) == 8
    assert gpus[5].active == frozenset({"hw_slowdown", "sw_power_cap"})
    assert gpus[5].bus_id == "00000000:AB:00.0" and gpus[5].sm_clock_mhz == 1110
    assert all(g.active == frozenset({"sw_power_cap"}) for i, g in enumerate(gpus) if i != 5)


def test_pre_r535_throttle_reason_names() -> None:
    gpus = parse_clock_events((DATA / "a100-4gpu-throttle-reasons-r525-gpu1-sw-thermal-constructed.csv").read_text())
    assert [sorted(g.active) for g in gpus] == [[], ["sw_thermal_slowdown"], [], []]


def test_noheader_with_the_field_list() -> None:
    fields = query_fields("clocks_event_reasons")
    text = "2, 00000000:3A:00.0, 1980, 0x0000000000000048, Active, Active, Not Active, Not Active, Not Active\n"
    (gpu,) = parse_clock_events(text, fields)
    assert gpu.index == 2 and gpu.active == frozenset({"hw_slowdown", "hw_thermal_slowdown"})
