"""intra_node.xid_errors judged on recorded kernel logs: fatal codes fail the GPU by bus id, others are reported."""

from __future__ import annotations

from pathlib import Path

from pytest_fabric.checks.xid import FATAL_XIDS, XidErrors, xid_measurement
from pytest_fabric.config.units import parse_quantity
from pytest_fabric.judge.verdict import Expectation, Op, judge
from pytest_fabric.parsers.kernel_log import parse_kernel_log
from pytest_fabric.probes.kernel_log import KernelLogReading

LOGS = Path(__file__).resolve().parents[1] / "data" / "kernel-log"
NOW = 1748319600.0  # 2025-05-27T04:20:00Z, a minute after the recorded Xid 79


def reading(name: str, *, now: float = NOW, uptime: float = 3600.0) -> KernelLogReading:
    return KernelLogReading("gpu07", parse_kernel_log((LOGS / name).read_text()), "dmesg", now, uptime, ())


def verdicts(settings: XidErrors, read: KernelLogReading) -> list[str]:
    measured = xid_measurement(read, settings)
    expectation = Expectation("intra_node", "xid_errors", Op.MAX, settings.max or parse_quantity(0),
                              "intra_node.xid_errors.max")
    judged = [judge(part, m, expectation) for part, m in (measured.parts or (("gpu07", measured),))]
    return [v.message for v in judged if not v.passed]


def test_defaults_are_the_catalogues_fatal_codes_and_none_allowed() -> None:
    settings = XidErrors()
    assert tuple(settings.fatal) == FATAL_XIDS == (48, 63, 64, 74, 79, 92, 94, 95, 119, 120)
    assert settings.max == parse_quantity(0) and settings.window is None and settings.log == "auto"


def test_xid_79_fails_the_gpu_by_bus_id_with_the_line() -> None:
    (message,) = verdicts(XidErrors(), reading("dmesg-x-iso-xid79-gpud-pr870-excerpt.txt"))
    assert message.startswith("gpu07 GPU 0000:04:00: measured 1, does not meet <= 0")
    assert "Xid 79 (GPU has fallen off the bus) x1" in message
    assert "NVRM: Xid (PCI:0000:04:00): 79, GPU has fallen off the bus" in message
    assert "read with dmesg" in message


def test_the_fallen_off_the_bus_notice_without_an_xid_line_fails_too() -> None:
    (message,) = verdicts(XidErrors(), reading("dmesg-fallen-off-bus-no-xid-nvsentinel-issue155-excerpt.txt"))
    assert message.startswith("gpu07 GPU 0000:b3:00: measured 1")


def test_application_xids_are_reported_not_failed() -> None:
    read = reading("dmesg-ctime-xid13-xid109-gpud-pr46-excerpt.txt")
    assert verdicts(XidErrors(), read) == []
    (part,) = xid_measurement(read, XidErrors()).parts
    assert part[0] == "gpu07 GPU 0000:cb:00"
    assert "reported (not fatal): Xid 13 (Graphics Engine Exception) x3, Xid 109 (Context Switch Timeout Error) x1" \
        in part[1].detail
    assert verdicts(XidErrors(fatal=[13]), read)  # a profile may make a code fatal


def test_a_window_leaves_out_what_came_before_it() -> None:
    read = reading("dmesg-x-iso-xid79-gpud-pr870-excerpt.txt", now=NOW + 7200)  # two hours after the Xid
    assert verdicts(XidErrors.model_validate({"window": "3600 s"}), read) == []
    assert verdicts(XidErrors.model_validate({"window": "10800 s"}), read)


def test_a_clean_log_passes_and_says_what_was_read() -> None:
    measured = xid_measurement(reading("dmesg-iso-bridge-util-linux-2.38.1.txt"), XidErrors())
    assert measured.value == parse_quantity(0)
    assert measured.detail == "no Xid event; 4 kernel line(s) since boot read with dmesg"
