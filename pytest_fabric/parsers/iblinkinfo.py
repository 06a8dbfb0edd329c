"""``iblinkinfo``: every switch (and CA) port, its width, speed, state and peer.

Default layout (one ``Switch:``/``CA:`` header, then one line per port)::

    Switch: 0x08c0eb0300add04e Quantum Mellanox Technologies:
              10   21[  ] ==( 4X      25.78125 Gbps Active/  LinkUp)==>      40    1[  ] "node3 HCA-2" ( Could be 53.125 Gbps)
              10    1[  ] ==(                Down/ Polling)==>             [  ] "" ( )

The ``( Could be ...)`` note is iblinkinfo saying both ends support a faster
speed or width than the link trained at: a downgraded link.  ``--line`` output
(node GUID and name repeated on every port line) is read too.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from decimal import Decimal

from pytest_fabric.config.units import Quantity, bandwidth
from pytest_fabric.parsers._textscan import split_lines, to_decimal
from pytest_fabric.parsers.base import UnrecognizedOutput, register

__all__ = ["IblinkinfoPort", "parse_iblinkinfo", "nominal_lane_rate_gbps"]

TOOL = "iblinkinfo"

_NODE_RE = re.compile(r"^(?P<type>Switch|CA):\s*(?:(?P<guid>0x[0-9a-fA-F]+)\s+)?(?P<name>.*?):?\s*$")
_PORT_RE = re.compile(
    r"^(?P<prefix>.*?)(?P<lid>[0-9]+)\s+(?P<port>[0-9]+)\[(?P<ext>[^\]]*)\]\s*"
    r"==\(\s*(?:(?P<width>[0-9]+X)\s+(?P<speed>[0-9]+(?:\.[0-9]+)?)\s*Gbps\s+)?"
    r"(?P<state>[A-Za-z]+)/\s*(?P<phys>[A-Za-z]+)\s*\)==>\s*"
    r"(?:(?P<peer_lid>[0-9]+)\s+(?P<peer_port>[0-9]+))?\s*\[(?P<peer_ext>[^\]]*)\]\s*"
    r"\"(?P<peer>[^\"]*)\"\s*\((?P<note>[^)]*)\)\s*$"
)
_LINE_PREFIX_RE = re.compile(r"^(?P<guid>0x[0-9a-fA-F]+)\s+\"(?P<name>[^\"]*)\"\s*$")
_COULD_BE_RE = re.compile(r"Could be\s+(?:(?P<width>[0-9]+X)\s*)?(?:(?P<speed>[0-9]+(?:\.[0-9]+)?)\s*Gbps)?")

# Per-lane signalling rate -> the data rate per lane people quote (4X EDR = 100 Gb/s,
# not 4 x 25.78125).  FDR10 signals at 10.3125 but carries 10.
_NOMINAL_LANE_GBPS = {
    Decimal("2.5"): Decimal("2.5"),
    Decimal("5"): Decimal("5"),
    Decimal("10"): Decimal("10"),
    Decimal("10.3125"): Decimal("10"),
    Decimal("14.0625"): Decimal("14"),
    Decimal("25.78125"): Decimal("25"),
    Decimal("53.125"): Decimal("50"),
    Decimal("106.25"): Decimal("100"),
    Decimal("212.5"): Decimal("200"),
}


def nominal_lane_rate_gbps(lane_speed_gbps: Decimal) -> Decimal:
    """The quoted per-lane rate for an iblinkinfo lane speed (25.78125 -> 25); unknown speeds pass through."""
    return _NOMINAL_LANE_GBPS.get(lane_speed_gbps.normalize(), lane_speed_gbps)


@dataclass(frozen=True)
class IblinkinfoPort:
    """One port line."""

    node_type: str | None  # Switch | CA (None when no header preceded the line)
    node_guid: str | None
    node_name: str | None
    lid: int
    port: int
    width: str | None  # "4X"; None when the port is down
    lanes: int | None
    lane_speed_gbps: Decimal | None  # as printed: 25.78125 for EDR
    rate_gbps: Decimal | None  # lanes x nominal lane rate: 100 for 4X EDR, 200 for 4X HDR
    state: str  # Active, Down, Init, Armed
    physical_state: str  # LinkUp, Polling, Disabled, ...
    peer_lid: int | None
    peer_port: int | None
    peer_name: str | None
    could_be_width: str | None = None
    could_be_lane_speed_gbps: Decimal | None = None
    could_be_rate_gbps: Decimal | None = None
    note: str = ""  # the bracketed text after the peer, stripped

    @property
    def downgraded(self) -> bool:
        """True when iblinkinfo says the link could run faster or wider."""
        return self.could_be_width is not None or self.could_be_lane_speed_gbps is not None

    @property
    def rate(self) -> Quantity | None:
        return None if self.rate_gbps is None else bandwidth(self.rate_gbps, "Gb/s")


def _lanes(width: str | None) -> int | None:
    return int(width[:-1]) if width else None


@register(TOOL, "iblinkinfo: per switch/CA port width, speed, rate, state, peer and 'Could be' downgrade hints",
          corpus=("iblinkinfo",))
def parse_iblinkinfo(text: str) -> list[IblinkinfoPort]:
    """Parse iblinkinfo output into one :class:`IblinkinfoPort` per port line."""
    node: tuple[str | None, str | None, str | None] = (None, None, None)
    ports: list[IblinkinfoPort] = []
    for number, line in enumerate(split_lines(TOOL, text), start=1):
        stripped = line.strip()
        if not stripped:
            continue
        match = _PORT_RE.match(stripped)
        if match:
            node_type, guid, name = node
            prefix = _LINE_PREFIX_RE.match(match.group("prefix").strip())
            if prefix:
                guid, name = prefix.group("guid"), prefix.group("name")
            width = match.group("width")
            lanes = _lanes(width)
            speed = to_decimal(TOOL, match.group("speed"), line=number, what="speed") if match.group("speed") else None
            rate = lanes * nominal_lane_rate_gbps(speed) if lanes is not None and speed is not None else None
            note = match.group("note").strip()
            could = _COULD_BE_RE.search(note)
            could_width = could_speed = could_rate = None
            if could and (could.group("width") or could.group("speed")):
                could_width = could.group("width")
                if could.group("speed"):
                    could_speed = to_decimal(TOOL, could.group("speed"), line=number, what="speed")
                    could_lanes = _lanes(could_width) or lanes
                    if could_lanes is not None:
                        could_rate = could_lanes * nominal_lane_rate_gbps(could_speed)
            ports.append(
                IblinkinfoPort(
                    node_type=node_type,
                    node_guid=guid,
                    node_name=name,
                    lid=int(match.group("lid")),
                    port=int(match.group("port")),
                    width=width,
                    lanes=lanes,
                    lane_speed_gbps=speed,
                    rate_gbps=rate,
                    state=match.group("state"),
                    physical_state=match.group("phys"),
                    peer_lid=int(match.group("peer_lid")) if match.group("peer_lid") else None,
                    peer_port=int(match.group("peer_port")) if match.group("peer_port") else None,
                    peer_name=match.group("peer") or None,
                    could_be_width=could_width,
                    could_be_lane_speed_gbps=could_speed,
                    could_be_rate_gbps=could_rate,
                    note=note,
                )
            )
            continue
        header = _NODE_RE.match(stripped)
        if header:
            node = (header.group("type"), header.group("guid"), header.group("name").strip() or None)
        # Other lines (ibwarn, MADs that timed out) carry no port and are left to the caller's judgement.
    if not ports:
        raise UnrecognizedOutput(TOOL, "no '<lid> <port>[..] ==( ... )==>' port line; is this iblinkinfo output?")
    return ports
