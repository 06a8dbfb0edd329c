"""One telemetry sample of a node during a soak: its GPUs (nvidia-smi) and its network ports (sysfs).

The sampling command (``pytest_fabric.probes.telemetry``) prints sections, each headed by a line
that starts with ``## ``:

- ``## gpu clocks_event_reasons full`` (``clocks_throttle_reasons`` on drivers before R535;
  ``basic`` where the driver refuses a field of the full set, e.g. ``remapped_rows`` before R450),
  then ``nvidia-smi --query-gpu=<gpu_fields(prefix, set)> --format=csv,noheader,nounits``;
- ``## gpu none: <why>`` where the node has no ``nvidia-smi``;
- ``## net``, then one line per interface but ``lo``: name, operstate, carrier_changes, rx_errors,
  tx_errors, rx_dropped (``-`` where sysfs has no such file);
- ``## ib``, then one line per InfiniBand/RoCE port in ``/sys/class/infiniband``: ``device/port``,
  its state and physical state (``4:ACTIVE``, ``5:LinkUp``: the spaces taken out), and its
  link_downed, symbol_error, port_rcv_errors and link_error_recovery counters.

:func:`parse_telemetry` turns it into :class:`Reading` s: a series name (``gpu0 temperature``,
``eth0 state``), a number, its unit and how the soak judges it (``level``: drawn;
``counter``: must not grow; ``state``: must not change; ``flag``: must stay 0).  Pure.
"""

from __future__ import annotations

from dataclasses import dataclass

from pytest_fabric.parsers.base import ParseError, UnrecognizedOutput
from pytest_fabric.parsers.nvidia_smi_clock_events import REASON_BITS
from pytest_fabric.parsers.nvidia_smi_query_gpu import parse_nvidia_smi_query_gpu

__all__ = ["GPU_FIELD_SETS", "THROTTLE_REASONS", "Reading", "Telemetry", "gpu_fields", "parse_telemetry"]

TOOL = "telemetry"

#: reasons that mean the GPU is being held back by heat, power brake or its own protection (a
#: soak fault); ``sw_power_cap`` under a full load is the board at its limit, and is not one
THROTTLE_REASONS = ("hw_slowdown", "sw_thermal_slowdown", "hw_thermal_slowdown", "hw_power_brake_slowdown")
_THROTTLE_MASK = sum(REASON_BITS[r] for r in THROTTLE_REASONS)

#: field -> (series suffix, unit, kind)
_GPU_SERIES = {
    "temperature.gpu": ("temperature", "C", "level"),
    "clocks.sm": ("SM clock", "MHz", "level"),
    "power.draw": ("power", "W", "level"),
    "ecc.errors.uncorrected.volatile.total": ("uncorrected ECC errors", "", "counter"),
    "remapped_rows.pending": ("remapped rows pending", "", "counter"),
    "remapped_rows.failure": ("row remapping failure", "", "counter"),
}
#: column of a ``## net`` line -> (series suffix, kind)
_NET_SERIES = (("carrier changes", "counter"), ("rx errors", "counter"), ("tx errors", "counter"),
               ("rx dropped", "counter"))


#: what every driver answers: the clocks and why they are held back
_BASIC = ("clocks.sm",)
GPU_FIELD_SETS = ("full", "basic")


def gpu_fields(prefix: str, which: str = "full") -> tuple[str, ...]:
    """The ``--query-gpu`` fields of one sample: the clock-event reasons' ``prefix``, the ``full`` set or
    the ``basic`` one (the SM clock and the reasons only)."""
    return ("index", *(_GPU_SERIES if which == "full" else _BASIC), f"{prefix}.active")


@dataclass(frozen=True)
class Reading:
    """One series' value in one sample."""

    series: str
    value: float | None
    unit: str = ""
    kind: str = "level"
    text: str = ""


@dataclass(frozen=True)
class Telemetry:
    """A sample's readings, and why a part was not sampled (``gpu``: no nvidia-smi)."""

    readings: tuple[Reading, ...]
    not_sampled: dict[str, str]


def _number(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


def _gpu(head: str, body: list[str]) -> list[Reading]:
    prefix, _, which = head.partition(" ")
    fields = gpu_fields(prefix, which.strip() or "full")
    result = parse_nvidia_smi_query_gpu("\n".join(body), fields)
    # a GPU that falls off the bus leaves the list: the count is a state that must hold
    out: list[Reading] = [Reading("nvidia-smi answers", 1.0, "", "state", "yes"),
                          Reading("GPUs seen", float(len(result.rows)), "", "state", str(len(result.rows)))]
    for number, row in enumerate(result.rows):
        gpu = f"gpu{row.index if row.index is not None else number}"
        for field, (name, unit, kind) in _GPU_SERIES.items():
            if field not in row.values:
                continue
            value = row.get_float(field)
            if value is not None:
                out.append(Reading(f"{gpu} {name}", value, unit, kind))
        mask = row.get(f"{prefix}.active")
        if mask is not None and mask.lower().startswith("0x"):
            bits = int(mask, 16)
            active = [r for r in THROTTLE_REASONS if bits & REASON_BITS[r]]
            out.append(Reading(f"{gpu} throttled", 1.0 if bits & _THROTTLE_MASK else 0.0, "", "flag",
                               ", ".join(r.replace("_", " ") for r in active)))
    return out


def _net(body: list[str]) -> list[Reading]:
    out: list[Reading] = []
    for line in body:
        parts = line.split()
        if len(parts) != 2 + len(_NET_SERIES):
            raise UnrecognizedOutput(TOOL, f"a ## net line has {len(parts)} words, not {2 + len(_NET_SERIES)}: "
                                           f"{line[:80]!r}")
        name, state = parts[0], parts[1]
        # operstate: up (1) or anything else (0); the word is kept for the report
        out.append(Reading(f"{name} state", 1.0 if state == "up" else 0.0, "", "state", state))
        for (series, kind), text in zip(_NET_SERIES, parts[2:]):
            value = _number(text)
            if value is not None:
                out.append(Reading(f"{name} {series}", value, "", kind))
    return out


#: column of a ``## ib`` line after the state and physical state -> series suffix (all counters)
_IB_COUNTERS = ("link downed", "symbol errors", "rcv errors", "link error recovery")


def _ib(body: list[str]) -> list[Reading]:
    out: list[Reading] = []
    for line in body:
        parts = line.split()
        if len(parts) != 3 + len(_IB_COUNTERS):
            raise UnrecognizedOutput(TOOL, f"a ## ib line has {len(parts)} words, not {3 + len(_IB_COUNTERS)}: "
                                           f"{line[:80]!r}")
        port, state, phys = parts[:3]
        word = state.partition(":")[2] or state
        out.append(Reading(f"{port} state", 1.0 if word == "ACTIVE" else 0.0, "", "state",
                           f"{word} ({phys.partition(':')[2] or phys})"))
        for series, text in zip(_IB_COUNTERS, parts[3:]):
            value = _number(text)
            if value is not None:
                out.append(Reading(f"{port} {series}", value, "", "counter"))
    return out


def parse_telemetry(text: str) -> Telemetry:
    """A sample's readings from the sampling command's sections (see the module)."""
    sections: list[tuple[str, list[str]]] = []
    for line in text.splitlines():
        if line.startswith("## "):
            sections.append((line[3:].strip(), []))
        elif line.strip() and sections:
            sections[-1][1].append(line)
    if not sections:
        raise UnrecognizedOutput(TOOL, "no '## ' section in the sample")
    readings: list[Reading] = []
    not_sampled: dict[str, str] = {}
    for head, body in sections:
        if head.startswith("gpu none"):
            why = head.partition(":")[2].strip() or "no nvidia-smi on the node"
            not_sampled["gpu"] = why
            if why.startswith("nvidia-smi:"):  # there, but failing: a fault once it answered before
                readings.append(Reading("nvidia-smi answers", 0.0, "", "state", f"no: {why}"))
        elif head.startswith("gpu "):
            try:
                readings += _gpu(head[4:].strip(), body)
            except ParseError as exc:  # the node's nvidia-smi failed: its ports are still sampled
                not_sampled["gpu"] = f"nvidia-smi: {exc}"
                readings.append(Reading("nvidia-smi answers", 0.0, "", "state", f"no: {exc}"))
        elif head == "ib":
            readings += _ib(body)
        elif head == "net":
            readings += _net(body)
            if not body:
                not_sampled["ports"] = "no network interface but lo in /sys/class/net"
    return Telemetry(tuple(readings), not_sampled)
