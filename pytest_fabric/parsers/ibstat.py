"""``ibstat``: channel adapters (CAs), their ports, state, physical state and rate.

Reads the default output (all CAs) and ``ibstat <ca>``::

    CA 'mlx5_0'
            CA type: MT4129
            ...
            Port 1:
                    State: Active
                    Physical state: LinkUp
                    Rate: 400
                    ...
                    Link layer: InfiniBand

ibstat prints ``ibpanic: ...`` and exits non-zero when a CA vanishes between
listing and reading it; that becomes a :class:`ToolReportedError`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from decimal import Decimal

from pytest_fabric.config.units import Quantity, bandwidth
from pytest_fabric.parsers._textscan import split_lines, to_decimal, to_int
from pytest_fabric.parsers.base import ParseError, ToolReportedError, UnrecognizedOutput, register

__all__ = ["IbstatPort", "IbstatCA", "parse_ibstat"]

TOOL = "ibstat"

_CA_RE = re.compile(r"^CA '(?P<name>[^']*)'\s*$")
_PORT_RE = re.compile(r"^\s+Port (?P<port>[0-9]+):\s*$")
_FIELD_RE = re.compile(r"^\s+(?P<key>[A-Za-z][A-Za-z ]*?):\s*(?P<value>.*?)\s*$")
_PANIC_RE = re.compile(r"^\s*(?:ibpanic|iberror):\s*(?P<message>.*?)\s*$")


@dataclass(frozen=True)
class IbstatPort:
    """One port of a CA as ibstat shows it."""

    port: int
    state: str  # Active, Down, Initializing, Armed
    physical_state: str  # LinkUp, Polling, Disabled, ...
    rate_gbps: Decimal  # ibstat's "Rate" is the port's data rate in Gb/s (400 for NDR 4X)
    link_layer: str  # InfiniBand | Ethernet
    base_lid: int | None = None
    lmc: int | None = None
    sm_lid: int | None = None
    capability_mask: int | None = None
    port_guid: str | None = None

    @property
    def rate(self) -> Quantity:
        """The rate as a bandwidth quantity."""
        return bandwidth(self.rate_gbps, "Gb/s")

    @property
    def is_active(self) -> bool:
        return self.state == "Active" and self.physical_state == "LinkUp"


@dataclass(frozen=True)
class IbstatCA:
    """One channel adapter (``CA 'mlx5_0'``) with its ports."""

    name: str
    ca_type: str | None
    number_of_ports: int | None
    firmware_version: str | None
    hardware_version: str | None
    node_guid: str | None
    system_image_guid: str | None
    ports: tuple[IbstatPort, ...]


_CA_KEYS = {
    "CA type": "ca_type",
    "Number of ports": "number_of_ports",
    "Firmware version": "firmware_version",
    "Hardware version": "hardware_version",
    "Node GUID": "node_guid",
    "System image GUID": "system_image_guid",
}
_PORT_KEYS = {
    "State": "state",
    "Physical state": "physical_state",
    "Rate": "rate_gbps",
    "Base lid": "base_lid",
    "LMC": "lmc",
    "SM lid": "sm_lid",
    "Capability mask": "capability_mask",
    "Port GUID": "port_guid",
    "Link layer": "link_layer",
}
_REQUIRED_PORT_FIELDS = ("state", "physical_state", "rate_gbps", "link_layer")


class _CABuilder:
    def __init__(self, name: str, line: int) -> None:
        self.name = name
        self.line = line
        self.fields: dict[str, object] = {}
        self.ports: list[tuple[int, int, dict[str, object]]] = []  # (port, line, fields)

    def build(self) -> IbstatCA:
        ports = []
        for number, line, fields in self.ports:
            missing = [key for key in _REQUIRED_PORT_FIELDS if key not in fields]
            if missing:
                names = ", ".join(k for k, v in _PORT_KEYS.items() if v in missing)
                raise ParseError(
                    TOOL, f"CA '{self.name}' port {number} has no {names} line (output truncated?)", line=line
                )
            ports.append(IbstatPort(port=number, **fields))  # type: ignore[arg-type]
        return IbstatCA(name=self.name, ports=tuple(ports), **{k: self.fields.get(k) for k in _CA_KEYS.values()})  # type: ignore[arg-type]


def _convert(key: str, value: str, line: int) -> object:
    if key == "rate_gbps":
        return to_decimal(TOOL, value, line=line, what="Rate")
    if key in ("base_lid", "lmc", "sm_lid", "capability_mask", "number_of_ports"):
        return to_int(TOOL, value, line=line, what=key)
    return value


@register(TOOL, "ibstat: CAs and ports (state, physical state, rate, LIDs, link layer)", corpus=("ibstat",))
def parse_ibstat(text: str) -> list[IbstatCA]:
    """Parse ``ibstat`` output into one :class:`IbstatCA` per ``CA '...'`` block.

    Raises :class:`ToolReportedError` when ibstat printed ``ibpanic:`` (the
    CAs read before the panic are on the exception as ``partial_result``),
    :class:`UnrecognizedOutput` when there is no CA block, and
    :class:`ParseError` for a port block that stops before its state/rate lines.
    """
    lines = split_lines(TOOL, text)
    cas: list[_CABuilder] = []
    port: dict[str, object] | None = None
    panic: tuple[int, str] | None = None
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        panic_match = _PANIC_RE.match(line)
        if panic_match:
            panic = (number, panic_match.group("message"))
            break
        ca_match = _CA_RE.match(line)
        if ca_match:
            cas.append(_CABuilder(ca_match.group("name"), number))
            port = None
            continue
        port_match = _PORT_RE.match(line)
        if port_match:
            if not cas:
                raise ParseError(TOOL, f"{line.strip()!r} before any CA '...' line", line=number)
            port = {}
            cas[-1].ports.append((int(port_match.group("port")), number, port))
            continue
        field_match = _FIELD_RE.match(line)
        if not field_match:
            continue  # ibwarn lines and anything else ibstat may add are not ours to judge
        key, value = field_match.group("key"), field_match.group("value")
        if key in _PORT_KEYS:
            if port is None:
                raise ParseError(TOOL, f"{key!r} outside a 'Port N:' block", line=number)
            port[_PORT_KEYS[key]] = _convert(_PORT_KEYS[key], value, number)
        elif key in _CA_KEYS:
            if not cas:
                raise ParseError(TOOL, f"{key!r} before any CA '...' line", line=number)
            cas[-1].fields[_CA_KEYS[key]] = _convert(_CA_KEYS[key], value, number)
    result = [ca.build() for ca in cas]
    if panic is not None:
        line_number, message = panic
        error = ToolReportedError(TOOL, f"ibstat reported \"ibpanic: {message}\"", line=line_number)
        error.partial_result = result  # type: ignore[attr-defined]
        raise error
    if not result:
        raise UnrecognizedOutput(TOOL, "no \"CA '...'\" block found; is this ibstat output?")
    return result
