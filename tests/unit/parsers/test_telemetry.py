"""parsers/telemetry.py: one soak telemetry sample (nvidia-smi --query-gpu and sysfs port counters)."""

from __future__ import annotations

import pytest

from pytest_fabric.parsers.base import UnrecognizedOutput
from pytest_fabric.parsers.telemetry import gpu_fields, parse_telemetry

# nvidia-smi --query-gpu=<gpu_fields("clocks_event_reasons")> --format=csv,noheader,nounits on two H100s:
# GPU 0 at the power cap (0x4) only; GPU 1 in hw slowdown (0x8) and hw thermal slowdown (0x40)
SAMPLE = """## gpu clocks_event_reasons full
0, 41, 1980, 115.32, 0, 0, 0, 0x0000000000000004
1, 87, 1410, 690.10, 2, 1, 0, 0x0000000000000048
## net
ibp0 up 1 0 0 3
eth0 down 4 0 - 0
"""


def test_gpu_and_port_readings_with_their_kinds() -> None:
    assert gpu_fields("clocks_event_reasons")[-1] == "clocks_event_reasons.active"
    t = parse_telemetry(SAMPLE)
    by = {r.series: r for r in t.readings}
    assert (by["gpu1 temperature"].value, by["gpu1 temperature"].unit, by["gpu1 temperature"].kind) == (87, "C", "level")
    assert by["gpu1 uncorrected ECC errors"].kind == "counter" and by["gpu1 uncorrected ECC errors"].value == 2
    assert by["gpu1 remapped rows pending"].value == 1
    assert by["gpu0 throttled"].value == 0  # the power cap alone is the board at its limit, no fault
    assert by["gpu1 throttled"].value == 1 and by["gpu1 throttled"].text == "hw slowdown, hw thermal slowdown"
    assert (by["eth0 state"].value, by["eth0 state"].text, by["eth0 state"].kind) == (0, "down", "state")
    assert "eth0 tx errors" not in by  # '-': sysfs had no such file
    assert by["ibp0 rx dropped"].value == 3
    assert (by["GPUs seen"].value, by["nvidia-smi answers"].text) == (2, "yes")
    assert t.not_sampled == {}


def test_the_basic_set_reads_clocks_and_reasons_only() -> None:
    t = parse_telemetry("## gpu clocks_throttle_reasons basic\n0, 1410, 0x0000000000000008\n## net\n")
    by = {r.series: r for r in t.readings}
    assert by["gpu0 SM clock"].value == 1410 and by["gpu0 throttled"].value == 1
    assert "gpu0 temperature" not in by
    assert t.not_sampled == {"ports": "no network interface but lo in /sys/class/net"}


def test_no_nvidia_smi_or_a_failing_one_is_said_as_not_sampled_and_the_ports_still_are() -> None:
    t = parse_telemetry("## gpu none: no nvidia-smi on the node\n## net\neth0 up 0 0 0 0\n")
    assert t.not_sampled == {"gpu": "no nvidia-smi on the node"}
    assert [r.series for r in t.readings][0] == "eth0 state"
    failing = parse_telemetry("## gpu none: nvidia-smi: NVIDIA-SMI has failed because it couldn't communicate "
                              "with the NVIDIA driver.\n## net\neth0 up 0 0 0 0\n")
    assert "NVIDIA-SMI has failed" in failing.not_sampled["gpu"]
    answers = next(r for r in failing.readings if r.series == "nvidia-smi answers")
    assert (answers.value, answers.kind) == (0, "state") and answers.text.startswith("no: nvidia-smi: NVIDIA-SMI")


def test_output_without_sections_or_a_short_port_line_is_refused() -> None:
    with pytest.raises(UnrecognizedOutput):
        parse_telemetry("hello\n")
    with pytest.raises(UnrecognizedOutput, match="words"):
        parse_telemetry("## net\neth0 up 1\n")


def test_infiniband_ports_state_and_counters() -> None:
    t = parse_telemetry("## net\n## ib\nmlx5_0/1 4:ACTIVE 5:LinkUp 3 0 12 1\nmlx5_1/1 1:DOWN 3:Disabled 0 0 0 -\n")
    by = {r.series: r for r in t.readings}
    assert (by["mlx5_0/1 state"].value, by["mlx5_0/1 state"].text, by["mlx5_0/1 state"].kind) == (1, "ACTIVE (LinkUp)", "state")
    assert by["mlx5_1/1 state"].value == 0 and by["mlx5_1/1 state"].text == "DOWN (Disabled)"
    assert by["mlx5_0/1 link downed"].value == 3 and by["mlx5_0/1 link downed"].kind == "counter"
    assert by["mlx5_0/1 rcv errors"].value == 12 and "mlx5_1/1 link error recovery" not in by
    with pytest.raises(UnrecognizedOutput, match="## ib line"):
        parse_telemetry("## ib\nmlx5_0/1 4:ACTIVE\n")
