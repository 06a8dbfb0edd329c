"""``intra_node.xid_errors``: NVIDIA Xid events in each node's kernel log, judged by code.

The NVIDIA driver reports GPU faults to the kernel log as Xid events (``NVRM: Xid
(PCI:0000:2a:00): 79, ... GPU has fallen off the bus.``). The check reads the log since boot,
or within ``window:``, with ``journalctl -k`` or ``dmesg`` (whichever the node allows: the
record says which, probes/kernel_log.py), and fails a GPU, named by its bus id, for every
event whose code is in ``fatal`` (the line is the evidence); other codes are reported. A node
whose log cannot be read is an error with the fix (``kernel.dmesg_restrict``), never a pass.

The default fatal codes are the ones NVIDIA's Xid catalogue (docs.nvidia.com/deploy/xid-errors,
"Xid Error Listing" and its recommended actions) ties to the GPU itself, hardware or memory,
rather than to the application: 48 (double-bit ECC), 63/64 (row remap or page retirement
event / failure), 74 (NVLink error), 79 (fallen off the bus), 92 (high single-bit ECC rate),
94/95 (contained / uncontained ECC error), 119/120 (GSP RPC timeout / GSP error). Azure's
azurehpc-health-checks fails a node on a superset of them (customTests/azure_gpu_xid.nhc:
``48 56 57 58 62 63 64 65 68 69 73 74 79 80 81 92 119 120``); a profile may widen ``fatal``
to that list. Xid 13, 31, 43 and 45 follow from what an application did and are reported only.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Literal

import pytest
from pydantic import Field, field_validator

from pytest_fabric.checks.base import Check
from pytest_fabric.config.profile import CheckSpec
from pytest_fabric.config.units import Dimension, Quantity, QuantityField, parse_quantity
from pytest_fabric.judge.verdict import Measurement, Op
from pytest_fabric.parsers.kernel_log import KernelLine, XidEvent, since, window_start, xid_events
from pytest_fabric.probes.kernel_log import KernelLogReading, read_kernel_log
from pytest_fabric.run.cluster import NodeHandle
from pytest_fabric.run.fixtures import SpecLookup
from pytest_fabric.run.waves import wave
from pytest_fabric.transport.outputcap import cap_text

__all__ = ["FATAL_XIDS", "XID_ERRORS", "XID_NAMES", "XidErrors", "pytest_fabric_checks", "xid_errors",
           "xid_measurement"]

#: the codes that fail a GPU by default (see the module docstring for where each comes from)
FATAL_XIDS: tuple[int, ...] = (48, 63, 64, 74, 79, 92, 94, 95, 119, 120)
#: what each common code means, in the words of NVIDIA's Xid catalogue (for the messages)
XID_NAMES: dict[int, str] = {
    13: "Graphics Engine Exception", 31: "GPU memory page fault", 32: "Invalid or corrupted push buffer stream",
    43: "GPU stopped processing", 45: "Preemptive cleanup, due to previous errors", 48: "Double Bit ECC Error",
    56: "Display Engine error", 57: "Error programming video memory interface", 58: "Unstable video memory interface",
    61: "Internal micro-controller breakpoint/warning", 62: "Internal micro-controller halt",
    63: "ECC page retirement or row remapping recording event",
    64: "ECC page retirement or row remapper recording failure", 65: "Video processor exception",
    68: "NVDEC0 Exception", 69: "Graphics Engine class error", 73: "NVENC2 Error", 74: "NVLINK Error",
    79: "GPU has fallen off the bus", 80: "Corrupted data sent to GPU", 81: "VGA Subsystem Error",
    92: "High single-bit ECC error rate", 94: "Contained ECC error", 95: "Uncontained ECC error",
    109: "Context Switch Timeout Error", 119: "GSP RPC Timeout", 120: "GSP Error",
}


class XidErrors(CheckSpec):
    """``max``: how many fatal Xid events a GPU may have in the log (0: none). ``fatal``: the codes that
    count (NVIDIA's catalogue: the GPU's own hardware and memory faults). ``window``: only events of
    the last this long (``24 h``); unset, since boot. ``log``: ``auto`` (journalctl -k, else dmesg),
    ``journal`` or ``dmesg``."""

    BOUNDS = (("max", Op.MAX, Dimension.COUNT),)
    SCALAR_FIELD = "max"
    max: QuantityField | None = Field(default_factory=lambda: parse_quantity(0))
    fatal: list[int] = Field(default_factory=lambda: list(FATAL_XIDS))
    window: QuantityField | None = None
    log: Literal["auto", "journal", "dmesg"] = "auto"

    @field_validator("window")
    @classmethod
    def _window(cls, value: Quantity | None) -> Quantity | None:
        return None if value is None else parse_quantity(value, dimension=Dimension.TIME)


#: test_xid_errors in the intra_node layer, one test per node (each GPU judged on its own), every node
#: read at once; late in the run (phase 98), so an Xid the run's own GPU load raised is in the log read
XID_ERRORS: Check[XidErrors] = Check("xid_errors", "intra_node", XidErrors, "node", "wave", phase=98,
                                     tools=("dmesg",), typical_s=1.0)


def pytest_fabric_checks(config: pytest.Config) -> list[Check[Any]]:
    """pytest-fabric registers this family the way an extension registers its checks."""
    return [XID_ERRORS]


def _when(line: KernelLine) -> str:
    if line.at is not None:
        return line.at.isoformat(timespec="seconds")
    return f"{line.uptime_s:.0f} s after boot" if line.uptime_s is not None else "(no date)"


def _name(code: int) -> str:
    return f"Xid {code} ({XID_NAMES[code]})" if code in XID_NAMES else f"Xid {code}"


#: a kernel log line is the node's text: each quoted at most this long (50 of them go in the record)
LINE_CHARS = 1_000


def _quote(event: XidEvent) -> str:
    return f"{_when(event.line)}: {cap_text(event.line.message.splitlines()[0].strip(), LINE_CHARS)}"


def xid_measurement(reading: KernelLogReading, settings: XidErrors) -> Measurement:
    """Pure: the node's Xid events judged per GPU (one part per GPU that has any; the node's log as a
    whole when none has)."""
    log, undated = reading.log, 0
    span = "since boot"
    if settings.window is not None:
        seconds = float(settings.window.to("s"))
        log, undated = since(reading.log, window_start(reading.now_epoch, seconds),
                             uptime_start=reading.uptime_s - seconds)
        span = f"in the last {settings.window}"
    fatal = set(settings.fatal)
    events = xid_events(log)
    where = f"{len(log.lines)} kernel line(s) {span} read with {reading.source}"
    if undated:
        where += f"; {undated} line(s) without a date counted as inside the window"
    if not events:
        return Measurement(value=parse_quantity(0), detail=f"no Xid event; {where}", evidence=reading.evidence,
                           extra={"log_source": reading.source, "xid": {}})
    by_gpu: dict[str, list[XidEvent]] = {}
    for event in events:
        by_gpu.setdefault(event.bus_id, []).append(event)
    parts = []
    for bus_id, found in sorted(by_gpu.items()):
        bad = [e for e in found if e.code in fatal]
        other = [e for e in found if e.code not in fatal]
        said = []
        if bad:
            said.append(f"fatal: {_name(bad[0].code)} x{sum(e.code == bad[0].code for e in bad)}"
                        + "".join(f", {_name(c)} x{sum(e.code == c for e in bad)}"
                                  for c in dict.fromkeys(e.code for e in bad) if c != bad[0].code)
                        + f"; first: {_quote(bad[0])}")
        if other:
            codes = dict.fromkeys(e.code for e in other)
            said.append("reported (not fatal): " + ", ".join(f"{_name(c)} x{sum(e.code == c for e in other)}"
                                                             for c in codes))
        parts.append((f"{reading.node} GPU {bus_id}", Measurement(
            value=parse_quantity(len(bad)), detail="; ".join(said) + f"; {where}", evidence=reading.evidence,
            extra={"log_source": reading.source, "bus_id": bus_id,
                   "events": [{"code": e.code, "fatal": e.code in fatal, "inferred": e.inferred,
                               "line": cap_text(e.line.text.splitlines()[0], LINE_CHARS)} for e in found[:50]]})))
    measured = Measurement.of_parts(parts)
    return dataclasses.replace(measured, extra={"log_source": reading.source,
                                                "xid": {bus: sorted({e.code for e in found}) for bus, found in by_gpu.items()}})


@pytest.fixture
@wave("node")
def xid_errors(node: NodeHandle, spec: SpecLookup) -> Measurement:
    """The node's kernel log read now (late in the run), its Xid events judged per GPU."""
    settings = spec(XID_ERRORS)
    return xid_measurement(read_kernel_log(node, settings.log), settings)
