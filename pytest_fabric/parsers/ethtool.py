"""``ethtool IFACE`` (link settings), ``ethtool -i`` (driver) and ``ethtool -S`` (NIC statistics).

Three tools, three registrations: the command line decides which output a
probe has, so each parser reads exactly one and rejects the others.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from pytest_fabric.parsers._textscan import split_lines, to_int
from pytest_fabric.parsers.base import ParseError, ToolReportedError, UnrecognizedOutput, register

__all__ = [
    "EthtoolSettings",
    "EthtoolDriverInfo",
    "parse_ethtool",
    "parse_ethtool_driver",
    "parse_ethtool_stats",
    "nonzero_error_stats",
]

_SETTINGS_RE = re.compile(r"^Settings for (?P<iface>\S+?):\s*$")
_FIELD_RE = re.compile(r"^\s+(?P<key>[A-Za-z][^:]*?):\s*(?P<value>.*?)\s*$")
_SPEED_RE = re.compile(r"^(?P<mbps>[0-9]+)\s*Mb/s$")
_LANES_RE = re.compile(r"[0-9]+")
_DRIVER_FIELD_RE = re.compile(r"^(?P<key>[a-z][a-z-]*):\s*(?P<value>.*?)\s*$")
_STAT_RE = re.compile(r"^\s*(?P<name>\S.*?):\s*(?P<value>-?[0-9]+)\s*$")
# ethtool's own failure messages ("Cannot get device settings: No such device", ...).
_ERROR_RE = re.compile(r"^(?:Cannot |Could not |netlink error|No stats available|no stats available)")
# Counter names that count lost or corrupted frames across drivers (mlx5, ixgbe, i40e, ice, bnxt).
_ERROR_STAT_RE = re.compile(r"err|drop|discard|crc|out_of_buffer|fifo|miss|overrun|timeout|symbol|link_down", re.IGNORECASE)


def _tool_error(tool: str, lines: list[str]) -> None:
    for number, line in enumerate(lines, start=1):
        if _ERROR_RE.match(line.strip()):
            raise ToolReportedError(tool, f"ethtool reported {line.strip()!r}", line=number)


@dataclass(frozen=True)
class EthtoolSettings:
    """``ethtool IFACE``: the link as the NIC driver reports it."""

    interface: str
    speed_mbps: int | None  # None when ethtool prints "Unknown!" (link down)
    duplex: str | None  # Full | Half | Unknown! ...
    port: str | None  # FIBRE, Direct Attach Copper, Twisted Pair, ...
    auto_negotiation: bool | None
    link_detected: bool | None
    supported_link_modes: tuple[str, ...] = ()
    advertised_link_modes: tuple[str, ...] = ()
    lanes: int | None = None
    fields: dict[str, str] = field(default_factory=dict)  # every "Key: value" as printed (first line of lists)


def _yes_no(value: str | None) -> bool | None:
    if value is None:
        return None
    lowered = value.strip().lower()
    if lowered in ("yes", "on"):
        return True
    if lowered in ("no", "off"):
        return False
    return None


@register("ethtool", "ethtool IFACE: speed (Mb/s), duplex, auto-negotiation, link detected", corpus=("ethtool",))
def parse_ethtool(text: str) -> EthtoolSettings:
    """Parse ``ethtool IFACE`` link settings."""
    tool = "ethtool"
    lines = split_lines(tool, text)
    if not any(_SETTINGS_RE.match(line) for line in lines):
        _tool_error(tool, lines)
    interface: str | None = None
    fields: dict[str, str] = {}
    lists: dict[str, list[str]] = {}
    current: str | None = None
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        if _ERROR_RE.match(line.strip()):
            # Without root, ethtool prints the settings it could read between
            # "Cannot get wake-on-lan settings: Operation not permitted" lines.
            current = None
            continue
        header = _SETTINGS_RE.match(line)
        if header:
            if interface is not None:
                raise ParseError(tool, "a second 'Settings for' block; parse one interface at a time", line=number)
            interface = header.group("iface")
            continue
        if interface is None:
            raise UnrecognizedOutput(tool, f"expected 'Settings for IFACE:', found {line.strip()[:80]!r}", line=number)
        found = _FIELD_RE.match(line)
        if found:
            current = found.group("key")
            fields.setdefault(current, found.group("value"))
            lists[current] = [found.group("value")] if found.group("value") else []
            continue
        if current is not None and line.startswith((" ", "\t")):
            # continuation of a list value (link modes, message level names)
            lists[current].extend(line.split())
            continue
        raise ParseError(tool, f"not a 'Key: value' line: {line.strip()[:80]!r}", line=number)
    if interface is None:
        raise UnrecognizedOutput(tool, "no 'Settings for IFACE:' line; is this ethtool output?")

    speed: int | None = None
    speed_text = fields.get("Speed")
    if speed_text is not None:
        matched = _SPEED_RE.match(speed_text)
        if matched:
            speed = int(matched.group("mbps"))
        elif not speed_text.startswith("Unknown"):
            raise ParseError(tool, f"Speed {speed_text!r} is neither '<n>Mb/s' nor 'Unknown!'")

    def modes(key: str) -> tuple[str, ...]:
        words = " ".join(lists.get(key, [])).split()
        return tuple(w for w in words if w not in ("Not", "reported"))

    lanes_text = fields.get("Lanes")
    return EthtoolSettings(
        interface=interface,
        speed_mbps=speed,
        duplex=fields.get("Duplex"),
        port=fields.get("Port"),
        auto_negotiation=_yes_no(fields.get("Auto-negotiation")),
        link_detected=_yes_no(fields.get("Link detected")),
        supported_link_modes=modes("Supported link modes"),
        advertised_link_modes=modes("Advertised link modes"),
        lanes=to_int(tool, lanes_text, what="Lanes") if lanes_text and _LANES_RE.fullmatch(lanes_text) else None,
        fields=fields,
    )


@dataclass(frozen=True)
class EthtoolDriverInfo:
    """``ethtool -i IFACE``."""

    driver: str
    version: str | None
    firmware_version: str | None
    expansion_rom_version: str | None
    bus_info: str | None  # PCI address of the NIC
    supports_statistics: bool | None
    supports_test: bool | None
    supports_eeprom_access: bool | None
    supports_register_dump: bool | None
    supports_priv_flags: bool | None


@register("ethtool-i", "ethtool -i IFACE: driver, version, firmware, bus-info", corpus=("ethtool",))
def parse_ethtool_driver(text: str) -> EthtoolDriverInfo:
    """Parse ``ethtool -i`` driver information."""
    tool = "ethtool-i"
    lines = split_lines(tool, text)
    _tool_error(tool, lines)
    fields: dict[str, str] = {}
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        found = _DRIVER_FIELD_RE.match(line)
        if not found:
            raise UnrecognizedOutput(tool, f"not a 'key: value' line of ethtool -i: {line.strip()[:80]!r}", line=number)
        fields[found.group("key")] = found.group("value")
    if "driver" not in fields:
        raise UnrecognizedOutput(tool, "no 'driver:' line; is this ethtool -i output?")

    def text_of(key: str) -> str | None:
        return fields.get(key) or None

    return EthtoolDriverInfo(
        driver=fields["driver"],
        version=text_of("version"),
        firmware_version=text_of("firmware-version"),
        expansion_rom_version=text_of("expansion-rom-version"),
        bus_info=text_of("bus-info"),
        supports_statistics=_yes_no(fields.get("supports-statistics")),
        supports_test=_yes_no(fields.get("supports-test")),
        supports_eeprom_access=_yes_no(fields.get("supports-eeprom-access")),
        supports_register_dump=_yes_no(fields.get("supports-register-dump")),
        supports_priv_flags=_yes_no(fields.get("supports-priv-flags")),
    )


@register("ethtool-S", "ethtool -S IFACE: NIC statistics by name (ints)", corpus=())
def parse_ethtool_stats(text: str) -> dict[str, int]:
    """Parse ``ethtool -S`` into ``{counter name: value}``."""
    tool = "ethtool-S"
    lines = split_lines(tool, text)
    _tool_error(tool, lines)
    stats: dict[str, int] = {}
    header_seen = False
    for number, line in enumerate(lines, start=1):
        stripped = line.strip()
        if not stripped:
            continue
        if stripped == "NIC statistics:":
            if header_seen:
                raise ParseError(tool, "a second 'NIC statistics:' header", line=number)
            header_seen = True
            continue
        if not header_seen:
            raise UnrecognizedOutput(tool, f"expected 'NIC statistics:', found {stripped[:80]!r}", line=number)
        found = _STAT_RE.match(line)
        if not found:
            raise ParseError(tool, f"not a 'name: integer' statistics line: {stripped[:80]!r}", line=number)
        stats[found.group("name")] = int(found.group("value"))
    if not header_seen:
        raise UnrecognizedOutput(tool, "no 'NIC statistics:' header; is this ethtool -S output?")
    return stats


def nonzero_error_stats(stats: dict[str, int]) -> dict[str, int]:
    """The counters of ``ethtool -S`` whose names say errors, drops or discards, when above zero."""
    return {name: value for name, value in stats.items() if value > 0 and _ERROR_STAT_RE.search(name)}
