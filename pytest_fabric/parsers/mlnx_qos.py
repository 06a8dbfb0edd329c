"""``mlnx_qos -i IFACE`` (MLNX_OFED, DOCA-OFED): trust mode, PFC per priority, buffers, DSCP and TC mappings.

Newer releases add ``Receive buffer size`` (since mlnx-tools b8c08c5, 2023, ending
``max_buffer_size=N``) and a per-priority ``buffer`` row under PFC; older ones print
``Priority trust mode`` and ``up:`` instead of ``priority:`` under each TC.  A
``dscp2prio`` line holds at most eight values (a priority with more continues on
another ``prio:N dscp:`` line).  All of these are read::

    Priority trust state: dscp
    PFC configuration:
            priority    0   1   2   3   4   5   6   7
            enabled     0   0   0   1   0   0   0   0
    tc: 3 ratelimit: unlimited, tsa: vendor
             priority:  3

A line the parser does not know (``default priority:`` of 2023 releases, a new
row) is skipped and listed in :attr:`MlnxQos.skipped`; the ``lldpad`` warning
mlnx_qos prints first is kept in :attr:`MlnxQos.warnings`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from pytest_fabric.parsers._textscan import split_lines, to_int
from pytest_fabric.parsers.base import ParseError, SkippedLines, UnrecognizedOutput, register

__all__ = ["MlnxQos", "MlnxQosTrafficClass", "parse_mlnx_qos"]

TOOL = "mlnx_qos"

_TRUST_RE = re.compile(r"^Priority trust (?:state|mode):\s*(?P<trust>\S+)\s*$")
_DCBX_RE = re.compile(r"^DCBX mode:\s*(?P<mode>.*?)\s*$")
_RXBUF_RE = re.compile(
    r"^Receive buffer size \(bytes\):\s*(?P<sizes>[0-9,\s]*?)[,\s]*"
    r"(?:(?:max_buffer_size|total_size)=(?P<max>[0-9]+))?\s*$"
)
_WARNING_RE = re.compile(r"^\*+\s*WARNING:\s*(?P<text>.*?)\s*\**$")
_CABLE_RE = re.compile(r"^Cable len:\s*(?P<len>[0-9]+)\s*$")
_ROW_RE = re.compile(r"^(?P<name>priority|enabled|buffer)\s+(?P<values>(?:[0-9]+\s*)+)$")
_DSCP_RE = re.compile(r"^prio:\s*(?P<prio>[0-9]+)\s+dscp:\s*(?P<dscp>[0-9,\s]*)$")
_TC_RE = re.compile(
    r"^tc:\s*(?P<tc>[0-9]+)\s+ratelimit:\s*(?P<ratelimit>[^,]*?)\s*,\s*tsa:\s*(?P<tsa>[^,\s]+)(?:\s*,\s*bw:\s*(?P<bw>[0-9]+)%)?\s*$"
)
_TC_PRIORITY_RE = re.compile(r"^(?:priority|up):\s*(?P<prios>[0-9][0-9\s]*)$")


@dataclass(frozen=True)
class MlnxQosTrafficClass:
    """One ``tc: N`` block: its rate limit, scheduler (tsa), ETS share, and the priorities mapped to it."""

    tc: int
    ratelimit: str  # "unlimited" or "<n> Gbps" as printed
    tsa: str  # vendor | strict | ets
    bw_percent: int | None
    priorities: tuple[int, ...]


@dataclass(frozen=True)
class MlnxQos:
    """The QoS state of one interface."""

    trust: str | None  # pcp | dscp
    dcbx_mode: str | None
    pfc_enabled: tuple[bool, ...]  # index = priority 0..7
    pfc_buffer: tuple[int, ...] | None  # receive buffer per priority (newer format)
    receive_buffer_sizes_bytes: tuple[int, ...] | None
    cable_length_m: int | None
    traffic_classes: tuple[MlnxQosTrafficClass, ...]
    dscp_to_priority: dict[int, int] = field(default_factory=dict)
    max_buffer_size_bytes: int | None = None
    """What buffers 0-7 may use together (``max_buffer_size=`` of newer releases)."""
    warnings: tuple[str, ...] = ()
    """mlnx_qos's own warnings (``lldpad service is running and may overwrite your settings``)."""
    skipped: tuple[str, ...] = ()
    """Lines read past without being understood, each once (the first 100)."""
    skipped_count: int = 0

    @property
    def pfc_priorities(self) -> tuple[int, ...]:
        """The priorities with PFC enabled (``(3,)`` for the usual RoCE setup)."""
        return tuple(priority for priority, enabled in enumerate(self.pfc_enabled) if enabled)

    @property
    def priority_to_tc(self) -> dict[int, int]:
        """``{priority: traffic class}`` from the tc blocks."""
        return {priority: tc.tc for tc in self.traffic_classes for priority in tc.priorities}


def _ints(text: str, line: int, what: str) -> tuple[int, ...]:
    return tuple(
        to_int(TOOL, part, line=line, what=what) for part in re.split(r"[,\s]+", text) if part
    )


@register(
    TOOL,
    "mlnx_qos -i IFACE: trust mode, PFC per priority, receive buffers, TC and DSCP mappings",
    corpus=("mlnx_qos",),
)
def parse_mlnx_qos(text: str) -> MlnxQos:
    """Parse ``mlnx_qos`` output (old and newer formats)."""
    trust = dcbx = None
    cable = None
    rx_buffers: tuple[int, ...] | None = None
    rows: dict[str, tuple[int, tuple[int, ...]]] = {}
    dscp: dict[int, int] = {}
    tcs: list[tuple[int, str, str, int | None, list[int]]] = []
    max_buffer: int | None = None
    warnings: list[str] = []
    skipped = SkippedLines()
    for number, line in enumerate(split_lines(TOOL, text), start=1):
        stripped = line.strip()
        if not stripped or stripped in ("PFC configuration:", "dscp2prio mapping:"):
            continue
        if found := _WARNING_RE.match(stripped):
            warnings.append(found.group("text"))
        elif found := _TRUST_RE.match(stripped):
            trust = found.group("trust")
        elif found := _DCBX_RE.match(stripped):
            dcbx = found.group("mode")
        elif found := _RXBUF_RE.match(stripped):
            rx_buffers = _ints(found.group("sizes"), number, "receive buffer size")
            max_buffer = int(found.group("max")) if found.group("max") else None
        elif found := _CABLE_RE.match(stripped):
            cable = int(found.group("len"))
        elif found := _ROW_RE.match(stripped):
            rows[found.group("name")] = (
                number,
                _ints(found.group("values"), number, found.group("name")),
            )
        elif found := _DSCP_RE.match(stripped):
            for value in _ints(found.group("dscp"), number, "dscp"):
                dscp[value] = int(found.group("prio"))
        elif found := _TC_RE.match(stripped):
            bw = found.group("bw")
            tcs.append(
                (
                    int(found.group("tc")),
                    found.group("ratelimit"),
                    found.group("tsa"),
                    int(bw) if bw else None,
                    [],
                )
            )
        elif (found := _TC_PRIORITY_RE.match(stripped)) and tcs:
            tcs[-1][4].extend(_ints(found.group("prios"), number, "priority"))
        else:
            # A priority line before any 'tc:', ECN or buffer headers, a row of a newer release.
            skipped.add(stripped)
    if "enabled" not in rows:
        raise UnrecognizedOutput(TOOL, "no PFC 'enabled' row; is this mlnx_qos output?")
    enabled_line, enabled = rows["enabled"]
    priorities = rows.get("priority", (enabled_line, tuple(range(len(enabled)))))[1]
    if len(priorities) != len(enabled) or sorted(priorities) != list(range(len(priorities))):
        raise ParseError(
            TOOL,
            f"PFC 'enabled' row has {len(enabled)} values for priorities {list(priorities)}",
            line=enabled_line,
        )
    if any(value not in (0, 1) for value in enabled):
        raise ParseError(
            TOOL, f"PFC 'enabled' values must be 0 or 1, got {list(enabled)}", line=enabled_line
        )
    by_priority = dict(zip(priorities, enabled))
    buffer = None
    if "buffer" in rows:
        buffer_line, buffer_values = rows["buffer"]
        if len(buffer_values) != len(priorities):
            raise ParseError(
                TOOL, "PFC 'buffer' row does not have one value per priority", line=buffer_line
            )
        buffer = tuple(dict(zip(priorities, buffer_values))[p] for p in sorted(priorities))
    return MlnxQos(
        trust=trust,
        dcbx_mode=dcbx,
        pfc_enabled=tuple(bool(by_priority[p]) for p in sorted(priorities)),
        pfc_buffer=buffer,
        receive_buffer_sizes_bytes=rx_buffers,
        cable_length_m=cable,
        traffic_classes=tuple(
            MlnxQosTrafficClass(tc, rate, tsa, bw, tuple(prios)) for tc, rate, tsa, bw, prios in tcs
        ),
        dscp_to_priority=dict(sorted(dscp.items())),
        max_buffer_size_bytes=max_buffer,
        warnings=tuple(warnings),
        skipped=skipped.lines,
        skipped_count=skipped.count,
    )
