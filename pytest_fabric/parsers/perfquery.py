"""``perfquery`` (infiniband-diags): port counters by name, per port.

Reads plain (``perfquery``), extended (``-x``, one block per port when several
ports are asked for) and the error-detail variants (``-E`` PortRcvErrorDetails,
``-D`` PortXmitDiscardDetails, ...).  Each block starts with a header::

    # Port extended counters: Lid 1719 port 1 (CapMask: 0x5300 CapMask2: 0x0000002)
    PortSelect:......................1
    SymbolErrorCounter:..............0

Data counters (PortXmitData/PortRcvData) are kept as printed: in 4-byte words.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from pytest_fabric.parsers._textscan import split_lines, to_int
from pytest_fabric.parsers.base import ParseError, ToolReportedError, UnrecognizedOutput, register

__all__ = ["ERROR_COUNTERS", "PerfqueryPort", "parse_perfquery", "error_counters", "nonzero_error_counters"]

TOOL = "perfquery"

# The error-type counters of IBTA PortCounters and of the PortRcvErrorDetails /
# PortXmitDiscardDetails breakdowns.  PortXmitWait (a time, not an event) is not listed.
# Which of them are link faults, congestion or routine is not the parser's call:
# probes/counters.py classifies them (PortXmitDiscards is congestion there, and
# PortRcvSwitchRelayErrors is not a fault, as with ibqueryerrors --suppress-common).
ERROR_COUNTERS: tuple[str, ...] = (
    "SymbolErrorCounter",
    "LinkErrorRecoveryCounter",
    "LinkDownedCounter",
    "PortRcvErrors",
    "PortRcvRemotePhysicalErrors",
    "PortRcvSwitchRelayErrors",
    "PortXmitDiscards",
    "PortXmitConstraintErrors",
    "PortRcvConstraintErrors",
    "LocalLinkIntegrityErrors",
    "ExcessiveBufferOverrunErrors",
    "VL15Dropped",
    "QP1Dropped",
    "PortLocalPhysicalErrors",
    "PortMalformedPktErrors",
    "PortBufferOverrunErrors",
    "PortDLIDMappingErrors",
    "PortVLMappingErrors",
    "PortLoopingErrors",
    "PortInactiveDiscards",
    "PortNeighborMTUDiscards",
    "PortSwLifetimeLimitDiscards",
    "PortSwHOQLifetimeLimitDiscards",
)

_HEADER_RE = re.compile(
    r"^#\s*(?P<kind>.*?)\s*:\s*Lid\s+(?P<lid>[0-9]+)\s+port\s+(?P<port>[0-9]+)\s*(?:\((?P<caps>[^)]*)\))?\s*$"
)
_COUNTER_RE = re.compile(r"^(?P<name>[A-Za-z][A-Za-z0-9_]*):\.*(?P<value>\S.*?)?\s*$")
_CAPMASK_RE = re.compile(r"CapMask:\s*(?P<mask>0x[0-9a-fA-F]+)")
_INT_RE = re.compile(r"^(?:[0-9]+|0x[0-9a-fA-F]+)$")

_KINDS = {
    "Port counters": "counters",
    "Port extended counters": "extended",
    "PortRcvErrorDetails counters": "rcv_error_details",
    "PortXmitDiscardDetails counters": "xmit_discard_details",
    "PortOpRcvCounters counters": "op_rcv_counters",
    "PortFlowCtlCounters counters": "flow_ctl_counters",
    "PortVLOpPackets counters": "vl_op_packets",
    "PortVLOpData counters": "vl_op_data",
    "PortVLXmitFlowCtlUpdateErrors counters": "vl_xmit_flow_ctl_update_errors",
    "PortVLXmitWaitCounters counters": "vl_xmit_wait",
    "PortSamplesControl": "samples_control",
    "PortSamplesResult": "samples_result",
}


@dataclass(frozen=True)
class PerfqueryPort:
    """One header block: which port, which counter set, and the counters by name."""

    kind: str  # counters | extended | rcv_error_details | xmit_discard_details | ... (or the header text)
    lid: int
    port: int  # 255 means "all ports" (perfquery -a)
    cap_mask: int | None
    counters: dict[str, int]
    other: dict[str, str] = field(default_factory=dict)  # non-numeric fields, as printed

    @property
    def errors(self) -> dict[str, int]:
        """The error counters present in this block (see :data:`ERROR_COUNTERS`)."""
        return error_counters(self)


def error_counters(port: PerfqueryPort) -> dict[str, int]:
    """The error counters of ``port`` that perfquery printed, by name, in ERROR_COUNTERS order."""
    return {name: port.counters[name] for name in ERROR_COUNTERS if name in port.counters}


def nonzero_error_counters(ports: list[PerfqueryPort]) -> dict[tuple[int, int], dict[str, int]]:
    """``{(lid, port): {counter: value}}`` for every error counter above zero."""
    found: dict[tuple[int, int], dict[str, int]] = {}
    for port in ports:
        bad = {name: value for name, value in error_counters(port).items() if value > 0}
        if bad:
            found.setdefault((port.lid, port.port), {}).update(bad)
    return found


@register(TOOL, "perfquery [-x|-E|...]: IB port counters by name per port, plus error-counter helpers",
          corpus=("perfquery",))
def parse_perfquery(text: str) -> list[PerfqueryPort]:
    """Parse perfquery output into one :class:`PerfqueryPort` per ``# ...: Lid N port M`` block."""
    blocks: list[tuple[str, int, int, int | None, dict[str, int], dict[str, str]]] = []
    for number, line in enumerate(split_lines(TOOL, text), start=1):
        stripped = line.strip()
        if not stripped:
            continue
        if stripped.startswith(("ibpanic:", "iberror:")) or "iberror:" in stripped:
            raise ToolReportedError(TOOL, f"perfquery reported {stripped!r}", line=number)
        if stripped.startswith("ibwarn:"):
            continue
        header = _HEADER_RE.match(stripped)
        if header:
            kind_text = header.group("kind")
            caps = _CAPMASK_RE.search(header.group("caps") or "")
            blocks.append(
                (
                    _KINDS.get(kind_text, kind_text),
                    int(header.group("lid")),
                    int(header.group("port")),
                    int(caps.group("mask"), 16) if caps else None,
                    {},
                    {},
                )
            )
            continue
        counter = _COUNTER_RE.match(stripped)
        if not counter:
            if not blocks:
                raise UnrecognizedOutput(TOOL, f"expected '# ... counters: Lid N port M', found {stripped[:80]!r}", line=number)
            raise ParseError(TOOL, f"not a 'Name:....value' counter line: {stripped[:80]!r}", line=number)
        if not blocks:
            raise UnrecognizedOutput(TOOL, f"counter {counter.group('name')!r} before any '# ...: Lid N port M' header", line=number)
        value = counter.group("value") or ""
        if _INT_RE.match(value):
            blocks[-1][4][counter.group("name")] = to_int(TOOL, value, line=number, what=counter.group("name"))
        else:
            blocks[-1][5][counter.group("name")] = value
    if not blocks:
        raise UnrecognizedOutput(TOOL, "no '# ... counters: Lid N port M' header; is this perfquery output?")
    return [PerfqueryPort(kind, lid, port, caps, counters, other) for kind, lid, port, caps, counters, other in blocks]
