"""The kernel log (dmesg, journalctl -k) on recorded outputs: lines, times, Xid and link-down events."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest
from unit.parsers.conftest import DATA

from pytest_fabric.parsers.base import ToolReportedError, UnrecognizedOutput
from pytest_fabric.parsers.kernel_log import (
    gpu_bus_id,
    link_events,
    parse_kernel_log,
    since,
    unreadable,
    window_start,
    xid_events,
)

LOGS = DATA / "kernel-log"


def read(name: str) -> str:
    return (LOGS / name).read_text()


def test_dmesg_fallen_off_the_bus_without_an_xid_line_is_xid_79() -> None:
    log = parse_kernel_log(read("dmesg-fallen-off-bus-no-xid-nvsentinel-issue155-excerpt.txt"))
    assert log.format == "dmesg"
    assert len(log.lines) == 3  # the notice's two indented lines belong to its first
    assert log.lines[0].uptime_s == pytest.approx(1843.308145)
    assert "fallen off the bus" in log.lines[0].message
    (event,) = xid_events(log)
    assert (event.bus_id, event.code, event.inferred) == ("0000:b3:00", 79, True)
    assert event.line.number == 1


def test_dmesg_ctime_xid_13_and_109_with_their_lines() -> None:
    log = parse_kernel_log(read("dmesg-ctime-xid13-xid109-gpud-pr46-excerpt.txt"))
    assert log.format == "dmesg-ctime"
    events = xid_events(log)
    assert [(e.bus_id, e.code) for e in events] == [("0000:cb:00", 13)] * 3 + [("0000:cb:00", 109)]
    assert events[-1].detail.startswith("pid=1797828, name=pt_main_thread, Ch 00000008")
    assert events[-1].line.at == datetime(2024, 8, 30, 11, 43, 14)  # local time, as dmesg -T prints it
    assert events[-1].line.text.startswith("[Fri Aug 30 11:43:14 2024] NVRM: Xid")


def test_dmesg_decoded_iso_xid_79() -> None:
    log = parse_kernel_log(read("dmesg-x-iso-xid79-gpud-pr870-excerpt.txt"))
    assert log.format == "dmesg-iso"
    (event,) = xid_events(log)
    assert (event.bus_id, event.code, event.inferred) == ("0000:04:00", 79, False)
    assert event.line.at == datetime(2025, 5, 27, 4, 18, 56, 89671, tzinfo=timezone.utc)


def test_journalctl_short_keeps_kernel_lines_and_reads_mlx5_port_states() -> None:
    log = parse_kernel_log(read("journalctl-k-mlx5-port-link-gpud-pr1209-excerpt.txt"))
    assert log.format == "journal"
    assert len(log.lines) == 4  # the five systemd[1] lines are not the kernel's
    assert all(line.at is None for line in log.lines)  # short format: no year
    events = link_events(log)
    assert [(e.device, e.port, e.state) for e in events] == [("mlx5_5", 1, "init"), ("mlx5_5", 1, "active")]
    assert not any(e.down for e in events)
    assert xid_events(log) == []


def test_dmesg_iso_captured_here() -> None:
    log = parse_kernel_log(read("dmesg-iso-bridge-util-linux-2.38.1.txt"))
    assert (log.format, len(log.lines)) == ("dmesg-iso", 4)
    assert log.lines[0].at == datetime(2026, 12, 2, 23, 32, 31, 219741, tzinfo=timezone.utc)
    assert xid_events(log) == [] and link_events(log) == []


def test_dmesg_restricted_is_the_tools_refusal() -> None:
    text = read("dmesg-restricted-util-linux-2.38.1.txt")
    assert unreadable(text) == "dmesg: read kernel buffer failed: Operation not permitted"
    with pytest.raises(ToolReportedError, match="Operation not permitted"):
        parse_kernel_log(text)


def test_journal_without_files_says_so() -> None:
    text = read("journalctl-no-journal-files-systemd.txt")
    assert unreadable(text) == "No journal files were found."
    with pytest.raises(ToolReportedError, match="No journal files"):
        parse_kernel_log(text)


def test_an_empty_journal_is_an_empty_log() -> None:
    assert parse_kernel_log("-- No entries --\n").lines == ()


def test_other_text_is_not_a_kernel_log() -> None:
    with pytest.raises(UnrecognizedOutput, match="kernel-log"):
        parse_kernel_log("GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-1)\n")


def test_journal_iso_with_old_driver_xid_and_netdev_links() -> None:
    log = parse_kernel_log(
        "2026-09-08T01:00:00+0000 n1 kernel: NVRM: Xid (0000:03:00): 14, Channel 00000001\n"
        "2026-09-08T01:00:01+0000 n1 kernel: mlx5_core 0000:3b:00.0 enp59s0f0np0: Link down\n"
        "2026-09-08T01:00:02+0000 n1 kernel: igc 0000:05:00.0 eth5: NIC Link is Up 100 Mbps Full Duplex\n"
        "2026-09-08T01:00:03+0000 n1 kernel: ib0: Lost carrier\n")
    assert log.format == "journal-iso"
    assert [(e.bus_id, e.code) for e in xid_events(log)] == [("0000:03:00", 14)]
    assert [(e.device, e.state) for e in link_events(log)] == [("enp59s0f0np0", "down"), ("eth5", "up"), ("ib0", "down")]


def test_window_keeps_lines_after_its_start_and_every_undated_one() -> None:
    log = parse_kernel_log(
        "2026-12-03T01:00:00,000000+00:00 mlx5_core 0000:ab:00.0 mlx5_5: Port: 1 Link DOWN\n"
        "2026-12-03T05:00:00,000000+00:00 mlx5_core 0000:ab:00.0 mlx5_5: Port: 1 Link DOWN\n")
    start = window_start(datetime(2026, 12, 3, 6, tzinfo=timezone.utc).timestamp(), 2 * 3600)  # from 04:00
    kept, undated = since(log, start)
    assert [line.number for line in kept.lines] == [2] and undated == 0
    raw = parse_kernel_log("[  100.0] ib0: Lost carrier\n[ 9000.0] ib0: Lost carrier\n")
    kept, undated = since(raw, start, uptime_start=5000.0)
    assert [line.number for line in kept.lines] == [2] and undated == 0
    kept, undated = since(raw, start)  # no boot time: neither can be placed outside the window
    assert len(kept.lines) == 2 and undated == 2


@pytest.mark.parametrize("written, expected", [
    ("00000000:3B:00.0", "0000:3b:00"), ("PCI:0000:cb:00", "0000:cb:00"), ("3b:00.0", "0000:3b:00"),
    ("0000:b3:00.0", "0000:b3:00"),
])
def test_bus_ids_as_nvrm_writes_them(written: str, expected: str) -> None:
    assert gpu_bus_id(written) == expected
