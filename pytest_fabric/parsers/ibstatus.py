"""``ibstatus``: one block per (device, port) with state, phys state and rate text::

    Infiniband device 'mlx5_0' port 1 status:
            default gid:     fe80:0000:0000:0000:0015:5dff:fd34:11eb
            base lid:        0x33bf
            sm lid:          0x1
            state:           4: ACTIVE
            phys state:      5: LinkUp
            rate:            200 Gb/sec (4X HDR)
            link_layer:      InfiniBand
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from decimal import Decimal

from pytest_fabric.config.units import Quantity, bandwidth

from pytest_fabric.parsers._textscan import split_lines, to_decimal, to_int
from pytest_fabric.parsers.base import ParseError, UnrecognizedOutput, register

__all__ = ["IbstatusPort", "parse_ibstatus"]

TOOL = "ibstatus"

_HEADER_RE = re.compile(r"^Infiniband device '(?P<device>[^']*)' port (?P<port>[0-9]+) status:\s*$")
_FIELD_RE = re.compile(r"^\s+(?P<key>[A-Za-z_][A-Za-z_ ]*?):\s*(?P<value>.*?)\s*$")
_CODED_RE = re.compile(r"^(?P<code>[0-9]+):\s*(?P<name>\S.*)$")
_RATE_RE = re.compile(r"^(?P<number>[0-9]+(?:\.[0-9]+)?)\s*Gb/sec(?:\s*\((?P<text>[^)]*)\))?$")


@dataclass(frozen=True)
class IbstatusPort:
    """One ``Infiniband device '...' port N status:`` block."""

    device: str
    port: int
    state: str  # ACTIVE, DOWN, INIT, ARMED
    state_code: int | None
    physical_state: str  # LinkUp, Polling, Disabled, ...
    physical_state_code: int | None
    rate_gbps: Decimal
    rate_text: str  # what ibstatus put in brackets: "4X HDR", "4X QDR", "4X"
    link_layer: str | None
    default_gid: str | None = None
    base_lid: int | None = None
    sm_lid: int | None = None

    @property
    def rate(self) -> Quantity:
        """The rate as a bandwidth quantity."""
        return bandwidth(self.rate_gbps, "Gb/s")

    @property
    def width(self) -> str | None:
        """The link width from the rate text (``4X``), when ibstatus printed one."""
        first = self.rate_text.split(" ", 1)[0]
        return first if first.endswith("X") else None


def _coded(value: str, line: int, what: str) -> tuple[str, int | None]:
    match = _CODED_RE.match(value)
    if match:
        return match.group("name").strip(), int(match.group("code"))
    if not value:
        raise ParseError(TOOL, f"empty {what}", line=line)
    return value, None


@register(TOOL, "ibstatus: per port state, phys state, rate (Gb/s and '4X HDR' text), link layer", corpus=("ibstatus",))
def parse_ibstatus(text: str) -> list[IbstatusPort]:
    """Parse ``ibstatus`` output into one :class:`IbstatusPort` per device port block."""
    blocks: list[tuple[str, int, int, dict[str, str], dict[str, int]]] = []
    for number, line in enumerate(split_lines(TOOL, text), start=1):
        if not line.strip():
            continue
        header = _HEADER_RE.match(line)
        if header:
            blocks.append((header.group("device"), int(header.group("port")), number, {}, {}))
            continue
        field = _FIELD_RE.match(line)
        if field:
            if not blocks:
                raise ParseError(TOOL, f"{field.group('key')!r} before any 'Infiniband device' line", line=number)
            blocks[-1][3][field.group("key")] = field.group("value")
            blocks[-1][4][field.group("key")] = number
    if not blocks:
        raise UnrecognizedOutput(TOOL, "no \"Infiniband device '...' port N status:\" block; is this ibstatus output?")
    return [_build(*block) for block in blocks]


def _build(device: str, port: int, header_line: int, fields: dict[str, str], lines: dict[str, int]) -> IbstatusPort:
    for key in ("state", "phys state", "rate"):
        if key not in fields:
            raise ParseError(TOOL, f"device {device!r} port {port} has no {key!r} line (output truncated?)", line=header_line)
    state, state_code = _coded(fields["state"], lines["state"], "state")
    phys, phys_code = _coded(fields["phys state"], lines["phys state"], "phys state")
    rate = _RATE_RE.match(fields["rate"])
    if not rate:
        raise ParseError(TOOL, f"rate {fields['rate']!r} is not '<number> Gb/sec (<width> <speed>)'", line=lines["rate"])

    def lid(key: str) -> int | None:
        return to_int(TOOL, fields[key], line=lines[key], what=key) if key in fields else None

    return IbstatusPort(
        device=device,
        port=port,
        state=state,
        state_code=state_code,
        physical_state=phys,
        physical_state_code=phys_code,
        rate_gbps=to_decimal(TOOL, rate.group("number"), line=lines["rate"], what="rate"),
        rate_text=(rate.group("text") or "").strip(),
        link_layer=fields.get("link_layer"),
        default_gid=fields.get("default gid"),
        base_lid=lid("base lid"),
        sm_lid=lid("sm lid"),
    )
