"""``ibv_devices``: the RDMA device names and their node GUIDs::

        device                 node GUID
        ------              ----------------
        mlx4_0              0002c90300a4e720
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from pytest_fabric.parsers._textscan import split_lines
from pytest_fabric.parsers.base import ParseError, ToolReportedError, UnrecognizedOutput, register

__all__ = ["IbvDeviceEntry", "parse_ibv_devices"]

TOOL = "ibv_devices"

_HEADER_RE = re.compile(r"^\s*device\s+node GUID\s*$")
_RULE_RE = re.compile(r"^\s*-+\s+-+\s*$")
_ENTRY_RE = re.compile(r"^\s*(?P<name>\S+)\s+(?P<guid>[0-9a-fA-F]{16})\s*$")


@dataclass(frozen=True)
class IbvDeviceEntry:
    """One device line."""

    name: str
    node_guid: str  # 16 hex digits, as printed (no 0x, no colons)


@register(TOOL, "ibv_devices: RDMA device names and node GUIDs", corpus=("ibv_devices",))
def parse_ibv_devices(text: str) -> list[IbvDeviceEntry]:
    """Parse ``ibv_devices`` into its device lines (an empty list when the table is empty)."""
    lines = split_lines(TOOL, text)
    header_seen = False
    entries: list[IbvDeviceEntry] = []
    for number, line in enumerate(lines, start=1):
        stripped = line.strip()
        if not stripped:
            continue
        if stripped.startswith(("Failed to get IB devices list", "No IB devices found")):
            raise ToolReportedError(TOOL, f"ibv_devices reported {stripped!r}", line=number)
        if _HEADER_RE.match(line):
            header_seen = True
            continue
        if not header_seen:
            raise UnrecognizedOutput(TOOL, f"expected the 'device  node GUID' header, found {stripped[:60]!r}", line=number)
        if _RULE_RE.match(line):
            continue
        entry = _ENTRY_RE.match(line)
        if not entry:
            raise ParseError(TOOL, f"not a '<device> <16-hex-digit GUID>' line: {stripped[:60]!r}", line=number)
        entries.append(IbvDeviceEntry(entry.group("name"), entry.group("guid").lower()))
    if not header_seen:
        raise UnrecognizedOutput(TOOL, "no 'device  node GUID' header; is this ibv_devices output?")
    return entries
