"""A node's kernel log line is quoted bounded: the record keeps 50 events, each line capped."""

from __future__ import annotations

from pytest_fabric.checks import xid
from pytest_fabric.parsers.kernel_log import parse_kernel_log, xid_events


def test_a_huge_xid_line_is_quoted_capped() -> None:
    line = "[  12.5] NVRM: Xid (PCI:0000:3b:00): 79, pid=1, GPU has fallen off the bus." + "x" * 2_000_000
    (event,) = xid_events(parse_kernel_log(line + "\n"))
    quoted = xid._quote(event)
    assert len(quoted) < 2 * xid.LINE_CHARS and "characters dropped" in quoted
