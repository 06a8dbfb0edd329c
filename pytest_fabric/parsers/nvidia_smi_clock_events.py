"""Clock-event (throttle) reasons from ``nvidia-smi --query-gpu=...clocks_event_reasons.* --format=csv``.

Drivers from R535 name the fields ``clocks_event_reasons.<reason>``; older ones
``clocks_throttle_reasons.<reason>`` (the same reasons, NVML's ``nvmlClocksEventReason*``).
Each reason reads ``Active`` or ``Not Active``; ``.active`` is the bit mask of all of them
(``0x0000000000000001``: GPU idle).  A reason this parser reads from either spelling:

- ``hw_slowdown``: HW slowdown (the board's own protection: over temperature, power brake, a
  power supply fault), ``hw_thermal_slowdown``, ``hw_power_brake_slowdown``
- ``sw_thermal_slowdown``: the driver holds clocks down because the GPU or its memory is too hot
- ``sw_power_cap``: the board is at its power limit (expected under a full GEMM; reported, not a fault)
- ``gpu_idle``, ``applications_clocks_setting``, ``sync_boost``, ``display_clock_setting``
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from pytest_fabric.parsers.base import ParseError, ToolReportedError, UnrecognizedOutput, register
from pytest_fabric.parsers.nvidia_smi_query_gpu import parse_nvidia_smi_query_gpu

__all__ = ["PREFIXES", "REASON_BITS", "ClockEvents", "parse_clock_events", "query_fields"]

TOOL = "nvidia-smi-clock-events"

#: field prefixes, newest first: R535 and later, then the older spelling
PREFIXES = ("clocks_event_reasons", "clocks_throttle_reasons")
#: NVML's nvmlClocksEventReason bits (nvml.h), for the ``.active`` mask
REASON_BITS = {
    "gpu_idle": 0x1,
    "applications_clocks_setting": 0x2,
    "sw_power_cap": 0x4,
    "hw_slowdown": 0x8,
    "sync_boost": 0x10,
    "sw_thermal_slowdown": 0x20,
    "hw_thermal_slowdown": 0x40,
    "hw_power_brake_slowdown": 0x80,
    "display_clock_setting": 0x100,
}
#: the reasons a sample asks for by name (the mask carries the rest)
NAMED = ("hw_slowdown", "hw_thermal_slowdown", "hw_power_brake_slowdown", "sw_thermal_slowdown", "sw_power_cap")
_MASK = re.compile(r"^0x[0-9A-Fa-f]+$")


def query_fields(prefix: str) -> tuple[str, ...]:
    """The fields one sample reads with ``prefix`` (one of :data:`PREFIXES`)."""
    return ("index", "pci.bus_id", "clocks.sm", f"{prefix}.active", *(f"{prefix}.{r}" for r in NAMED))


@dataclass(frozen=True)
class ClockEvents:
    """One GPU's reasons in one sample: those active, by name, and the SM clock (MHz) when read."""

    index: int
    bus_id: str | None
    active: frozenset[str]
    sm_clock_mhz: int | None


@register(TOOL, "nvidia-smi --query-gpu=index,pci.bus_id,clocks.sm,clocks_event_reasons.* (or clocks_throttle_reasons.*) --format=csv: active clock-event reasons per GPU", corpus=("nvidia-smi-query-gpu",))
def parse_clock_events(text: str, fields: Sequence[str] | None = None) -> tuple[ClockEvents, ...]:
    """Each GPU's active reasons, from the named fields and the ``.active`` mask (whichever was queried)."""
    try:
        result = parse_nvidia_smi_query_gpu(text, fields)
    except ToolReportedError as exc:  # said as this parser's, in nvidia-smi's own words
        raise ToolReportedError(TOOL, str(exc).split(": ", 1)[-1], line=exc.line) from None
    except ParseError as exc:
        raise UnrecognizedOutput(TOOL, str(exc).split(": ", 1)[-1], line=exc.line) from None
    out = []
    for number, row in enumerate(result.rows, start=1):
        prefix = next((p for p in PREFIXES if any(k.startswith(p + ".") for k in row.values)), None)
        if prefix is None:
            raise UnrecognizedOutput(TOOL, "no clocks_event_reasons.* or clocks_throttle_reasons.* field was queried")
        active: set[str] = set()
        for key, value in row.values.items():
            if not key.startswith(prefix + "."):
                continue
            reason = key[len(prefix) + 1:]
            if reason == "active":
                if value is not None and _MASK.match(value):
                    mask = int(value, 16)
                    active |= {name for name, bit in REASON_BITS.items() if mask & bit}
                continue
            if reason == "supported":
                continue
            if value is not None and value.strip().lower() == "active":
                active.add(reason)
        index = row.index if "index" in row.values else None
        out.append(ClockEvents(index if index is not None else number - 1, row.pci_bus_id, frozenset(active),
                               row.get_int("clocks.sm") if "clocks.sm" in row.values else None))
    return tuple(out)
