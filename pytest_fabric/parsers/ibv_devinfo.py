"""``ibv_devinfo`` and ``ibv_devinfo -v``: RDMA devices, ports, MTUs, speeds.

Both the upstream rdma-core layout and MLNX_OFED's (which adds a ``Device ports:``
header and, with ``-v``, many ``EXP_`` capability lines) are read.  Values are
``key:<tabs or spaces>value``; enumerated values carry their code in brackets
(``PORT_ACTIVE (4)``, ``4096 (5)``, ``POLLING (2)``), which is kept apart.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from decimal import Decimal

from pytest_fabric.config.units import Quantity, bandwidth
from pytest_fabric.parsers._textscan import split_lines, to_decimal, to_int
from pytest_fabric.parsers.base import ParseError, ToolReportedError, UnrecognizedOutput, register

__all__ = ["IbvPort", "IbvDevice", "parse_ibv_devinfo"]

TOOL = "ibv_devinfo"

_HCA_RE = re.compile(r"^\s*hca_id:\s*(?P<name>\S+)\s*$")
_PORT_RE = re.compile(r"^\s*port:\s*(?P<port>[0-9]+)\s*$")
_GID_RE = re.compile(r"^\s*GID\[\s*(?P<index>[0-9]+)\]:\s*(?P<gid>\S+)(?:,\s*(?P<type>.*?))?\s*$")
_FIELD_RE = re.compile(r"^\s*(?P<key>[A-Za-z_][A-Za-z0-9_]*):\s*(?P<value>.*?)\s*$")
_CODED_RE = re.compile(r"^(?P<name>.*?)\s*\((?P<code>[0-9]+)\)$")
_SPEED_RE = re.compile(r"^(?P<gbps>[0-9]+(?:\.[0-9]+)?)\s*Gbps$")
_WIDTH_RE = re.compile(r"^(?P<lanes>[0-9]+)X$")
_TOOL_ERRORS = ("No IB devices found", "Failed to get IB devices list", "Failed to open device", "Failed to query")


@dataclass(frozen=True)
class IbvPort:
    """One ``port: N`` block; the fields after ``link_layer`` appear only with ``-v``."""

    port: int
    state: str  # PORT_ACTIVE, PORT_DOWN, PORT_INIT, PORT_ARMED
    state_code: int | None
    max_mtu_bytes: int | None
    active_mtu_bytes: int | None
    sm_lid: int | None
    port_lid: int | None
    port_lmc: int | None
    link_layer: str | None  # InfiniBand | Ethernet
    active_width: str | None = None  # "4X"
    active_speed: str | None = None  # as printed: "25.0 Gbps", "invalid speed"
    active_speed_gbps: Decimal | None = None  # per lane
    rate_gbps: Decimal | None = None  # lanes x per-lane speed, when both are known
    phys_state: str | None = None  # LINK_UP, POLLING, DISABLED, ...
    phys_state_code: int | None = None
    gids: tuple[tuple[int, str], ...] = ()

    @property
    def rate(self) -> Quantity | None:
        """The port rate (width x speed) as a bandwidth quantity; None without ``-v``."""
        return None if self.rate_gbps is None else bandwidth(self.rate_gbps, "Gb/s")

    @property
    def is_active(self) -> bool:
        return self.state == "PORT_ACTIVE"


@dataclass(frozen=True)
class IbvDevice:
    """One ``hca_id:`` block."""

    name: str
    transport: str | None
    fw_ver: str | None
    node_guid: str | None
    sys_image_guid: str | None
    vendor_id: int | None
    vendor_part_id: int | None
    hw_ver: str | None
    board_id: str | None
    phys_port_cnt: int | None
    ports: tuple[IbvPort, ...]
    # With -v: every other ``key: value`` of the device block, as printed.
    capabilities: dict[str, str] = field(default_factory=dict)


_DEVICE_KEYS = ("transport", "fw_ver", "node_guid", "sys_image_guid", "vendor_id", "vendor_part_id",
                "hw_ver", "board_id", "phys_port_cnt")


def _coded(value: str) -> tuple[str, int | None]:
    match = _CODED_RE.match(value)
    if match:
        return match.group("name"), int(match.group("code"))
    return value, None


def _build_port(number: int, line: int, fields: dict[str, tuple[str, int]], gids: list[tuple[int, str]]) -> IbvPort:
    if "state" not in fields:
        raise ParseError(TOOL, f"port {number} has no 'state:' line (output truncated?)", line=line)

    def integer(key: str) -> int | None:
        if key not in fields:
            return None
        value, at = fields[key]
        return to_int(TOOL, _coded(value)[0], line=at, what=key)

    state, state_code = _coded(fields["state"][0])
    width = speed_text = phys = None
    speed = rate = None
    phys_code = None
    if "active_width" in fields:
        width = _coded(fields["active_width"][0])[0]
    if "active_speed" in fields:
        speed_text, _ = _coded(fields["active_speed"][0])
        speed_match = _SPEED_RE.match(speed_text)
        if speed_match:
            speed = to_decimal(TOOL, speed_match.group("gbps"), line=fields["active_speed"][1], what="active_speed")
    if "phys_state" in fields:
        phys, phys_code = _coded(fields["phys_state"][0])
    lanes = _WIDTH_RE.match(width or "")
    if lanes and speed is not None:
        rate = speed * int(lanes.group("lanes"))
    return IbvPort(
        port=number,
        state=state,
        state_code=state_code,
        max_mtu_bytes=integer("max_mtu"),
        active_mtu_bytes=integer("active_mtu"),
        sm_lid=integer("sm_lid"),
        port_lid=integer("port_lid"),
        port_lmc=integer("port_lmc"),
        link_layer=fields["link_layer"][0] if "link_layer" in fields else None,
        active_width=width,
        active_speed=speed_text,
        active_speed_gbps=speed,
        rate_gbps=rate,
        phys_state=phys,
        phys_state_code=phys_code,
        gids=tuple(gids),
    )


class _DeviceBuilder:
    def __init__(self, name: str) -> None:
        self.name = name
        self.fields: dict[str, tuple[str, int]] = {}
        self.ports: list[IbvPort] = []

    def build(self) -> IbvDevice:
        def integer(key: str) -> int | None:
            if key not in self.fields:
                return None
            value, at = self.fields[key]
            return to_int(TOOL, value, line=at, what=key)

        def text(key: str) -> str | None:
            return self.fields[key][0] if key in self.fields else None

        return IbvDevice(
            name=self.name,
            transport=text("transport"),
            fw_ver=text("fw_ver"),
            node_guid=text("node_guid"),
            sys_image_guid=text("sys_image_guid"),
            vendor_id=integer("vendor_id"),
            vendor_part_id=integer("vendor_part_id"),
            hw_ver=text("hw_ver"),
            board_id=text("board_id"),
            phys_port_cnt=integer("phys_port_cnt"),
            ports=tuple(self.ports),
            capabilities={k: v for k, (v, _) in self.fields.items() if k not in _DEVICE_KEYS and v},
        )


@register(TOOL, "ibv_devinfo [-v]: devices, port state, MTU, width/speed, phys state, link layer",
          corpus=("ibv_devinfo",))
def parse_ibv_devinfo(text: str) -> list[IbvDevice]:
    """Parse ``ibv_devinfo`` (plain or ``-v``) into one :class:`IbvDevice` per ``hca_id``."""
    lines = split_lines(TOOL, text)
    devices: list[_DeviceBuilder] = []
    port: tuple[int, int, dict[str, tuple[str, int]], list[tuple[int, str]]] | None = None

    def close_port() -> None:
        nonlocal port
        if port is not None:
            devices[-1].ports.append(_build_port(*port))
            port = None

    for number, line in enumerate(lines, start=1):
        stripped = line.strip()
        if not stripped:
            continue
        if any(stripped.startswith(message) for message in _TOOL_ERRORS):
            raise ToolReportedError(TOOL, f"ibv_devinfo reported {stripped!r}", line=number)
        hca = _HCA_RE.match(line)
        if hca:
            if devices:
                close_port()
            devices.append(_DeviceBuilder(hca.group("name")))
            continue
        port_match = _PORT_RE.match(line)
        if port_match:
            if not devices:
                raise ParseError(TOOL, "'port:' before any 'hca_id:' line", line=number)
            close_port()
            port = (int(port_match.group("port")), number, {}, [])
            continue
        gid = _GID_RE.match(line)
        if gid:
            if port is None:
                raise ParseError(TOOL, "GID line outside a 'port:' block", line=number)
            port[3].append((int(gid.group("index")), gid.group("gid")))
            continue
        found = _FIELD_RE.match(line)
        if not found:
            continue  # capability flag lists and prose lines of -v
        key, value = found.group("key"), found.group("value")
        if not devices:
            raise ParseError(TOOL, f"{key!r} before any 'hca_id:' line", line=number)
        if port is not None:
            port[2][key] = (value, number)
        else:
            devices[-1].fields.setdefault(key, (value, number))
    if not devices:
        raise UnrecognizedOutput(TOOL, "no 'hca_id:' line; is this ibv_devinfo output?")
    close_port()
    return [device.build() for device in devices]
