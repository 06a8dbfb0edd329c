"""Reading a node's kernel log: journalctl -k, else dmesg, saying which; neither readable is an error with the fix."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from pytest_fabric.config.inventory import Node
from pytest_fabric.probes.base import MeasurementError
from pytest_fabric.probes.kernel_log import CLOCK, DMESG, JOURNAL, read_kernel_log
from pytest_fabric.run.cluster import NodeHandle
from pytest_fabric.transport.mock import CannedCommand, MockTransport
from pytest_fabric.transport.pool import ConnectionPool

LOGS = Path(__file__).resolve().parents[1] / "data" / "kernel-log"
NO_JOURNAL = CannedCommand(stdout="-- No entries --\n", stderr="No journal files were found.\n")
RESTRICTED = CannedCommand(stderr=(LOGS / "dmesg-restricted-util-linux-2.38.1.txt").read_text(), exit_code=1)
XID_79 = "2025-05-27T04:18:56,089671+00:00 NVRM: Xid (PCI:0000:04:00): 79, GPU has fallen off the bus\n"


def node(journal: CannedCommand, dmesg: CannedCommand) -> NodeHandle:
    transport = MockTransport("gpu07", {
        f"^{re.escape(CLOCK)}$": CannedCommand(stdout="1764734400\n86400.00 170000.00\n"),
        f"^{re.escape(JOURNAL)}$": journal,
        f"^{re.escape(DMESG)}$": dmesg,
    })
    return NodeHandle(Node(name="gpu07", host="10.0.0.7"), ConnectionPool(lambda _n: transport))


def test_the_journal_first() -> None:
    journal = CannedCommand(stdout="2026-09-08T01:00:00+0000 gpu07 kernel: NVRM: Xid (PCI:0000:3b:00): 79, x\n")
    reading = read_kernel_log(node(journal, CannedCommand(stdout=XID_79)))
    assert reading.source == "journalctl -k"
    assert reading.log.format == "journal-iso"
    assert (reading.now_epoch, reading.uptime_s) == (1764734400.0, 86400.0)
    assert [r.command for r in reading.evidence] == [CLOCK, JOURNAL]


def test_no_journal_files_reads_dmesg_and_says_why() -> None:
    reading = read_kernel_log(node(NO_JOURNAL, CannedCommand(stdout=XID_79)))
    assert reading.source == "dmesg (journalctl -k: No journal files were found.)"
    assert reading.log.format == "dmesg-iso"


def test_journalctl_not_installed_reads_dmesg() -> None:
    missing = CannedCommand(stderr="bash: line 1: journalctl: command not found\n", exit_code=127)
    reading = read_kernel_log(node(missing, CannedCommand(stdout=XID_79)))
    assert reading.source.startswith("dmesg (journalctl -k: ")


def test_a_log_neither_tool_reads_is_an_error_with_the_fix() -> None:
    with pytest.raises(MeasurementError) as caught:
        read_kernel_log(node(NO_JOURNAL, RESTRICTED))
    text = str(caught.value)
    assert "gpu07" in text and "No journal files were found." in text
    assert "dmesg: read kernel buffer failed: Operation not permitted" in text
    assert "kernel.dmesg_restrict=0" in text and "systemd-journal" in text


def test_a_named_tool_is_read_alone() -> None:
    with pytest.raises(MeasurementError, match="dmesg: dmesg: read kernel buffer failed"):
        read_kernel_log(node(CannedCommand(stdout="unused\n"), RESTRICTED), "dmesg")
