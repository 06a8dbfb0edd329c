"""``lspci -vv`` / ``-vvv`` (optionally ``-nn``, ``-x``): PCIe link capability and status per device.

What the checks need is, per device, the link it can train at (``LnkCap``) and
the link it trained at (``LnkSta``)::

    19:00.0 3D controller: NVIDIA Corporation Device 2330 (rev a1)
            LnkCap: Port #0, Speed 32GT/s, Width x16, ASPM L1, Exit Latency L1 <4us
            LnkSta: Speed 32GT/s (ok), Width x16 (ok)

``lspci ... | grep -i width`` excerpts (LnkCap/LnkSta lines without the device
header) are read as devices without an address.  A whole machine's ``-vvv`` is
about a megabyte, so only the lines that matter are looked at closely.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from decimal import Decimal

from pytest_fabric.parsers._textscan import split_lines
from pytest_fabric.parsers.base import UnrecognizedOutput, register

__all__ = ["LspciDevice", "parse_lspci", "pcie_generation"]

TOOL = "lspci"

_DEVICE_RE = re.compile(
    r"^(?P<bdf>(?:[0-9a-fA-F]{4}:)?[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7])\s+(?P<rest>.*?)\s*$"
)
_CLASS_RE = re.compile(r"^(?P<cls>[^:]*?)(?:\s*\[[0-9a-fA-F]{4}\])?:\s*(?P<desc>.*)$")
_IDS_RE = re.compile(r"\[(?P<vendor>[0-9a-fA-F]{4}):(?P<device>[0-9a-fA-F]{4})\]")
_NUMERIC_RE = re.compile(r"^[0-9a-fA-F]{4}:\s*(?P<vendor>[0-9a-fA-F]{4}):(?P<device>[0-9a-fA-F]{4})")
_SPEED = r"(?:(?P<{0}>[0-9]+(?:\.[0-9]+)?)GT/s|unknown)"
_LNKCAP_RE = re.compile(
    r"LnkCap:\s*(?:Port #(?P<port>[0-9]+),\s*)?Speed\s+" + _SPEED.format("speed") + r"[^,]*,\s*Width x(?P<width>[0-9]+)"
)
_LNKSTA_RE = re.compile(
    r"LnkSta:\s*Speed\s+" + _SPEED.format("speed") + r"(?:\s*\((?P<speed_note>[a-z]+)\))?,\s*"
    r"Width x(?P<width>[0-9]+)(?:\s*\((?P<width_note>[a-z]+)\))?"
)
_HEXDUMP_RE = re.compile(r"^00:\s+(?P<b0>[0-9a-fA-F]{2})\s+(?P<b1>[0-9a-fA-F]{2})\s+(?P<b2>[0-9a-fA-F]{2})\s+(?P<b3>[0-9a-fA-F]{2})")

_GENERATIONS = {
    Decimal("2.5"): 1,
    Decimal("5"): 2,
    Decimal("8"): 3,
    Decimal("16"): 4,
    Decimal("32"): 5,
    Decimal("64"): 6,
    Decimal("128"): 7,
}


def pcie_generation(speed_gts: Decimal | None) -> int | None:
    """The PCIe generation of a link speed in GT/s (2.5 -> 1, 5 -> 2, 8 -> 3, 16 -> 4, 32 -> 5, 64 -> 6)."""
    if speed_gts is None:
        return None
    return _GENERATIONS.get(speed_gts.normalize())


@dataclass(frozen=True)
class LspciDevice:
    """One PCI function with its PCIe link, when it has one."""

    bdf: str | None  # None for grep excerpts without the device line
    class_name: str | None  # "3D controller", "Ethernet controller", "Infiniband controller"
    description: str | None  # the rest of the device line: vendor, device name, revision
    vendor_id: str | None  # 4 hex digits, from -nn/-n ids or the -x config dump
    device_id: str | None
    numa_node: int | None
    kernel_driver: str | None
    link_cap_speed_gts: Decimal | None
    link_cap_width: int | None
    link_sta_speed_gts: Decimal | None
    link_sta_width: int | None
    link_cap_generation: int | None  # from the GT/s: 16 -> 4, 32 -> 5
    link_sta_generation: int | None
    speed_downgraded: bool
    width_downgraded: bool
    downgraded: bool  # the link trained slower or narrower than it can run


class _Builder:
    __slots__ = ("bdf", "class_name", "description", "vendor_id", "device_id", "numa_node", "driver",
                 "cap_speed", "cap_width", "sta_speed", "sta_width", "speed_note", "width_note")

    def __init__(self, bdf: str | None, rest: str | None) -> None:
        self.bdf = bdf
        self.class_name: str | None = None
        self.description: str | None = None
        self.vendor_id: str | None = None
        self.device_id: str | None = None
        self.numa_node: int | None = None
        self.driver: str | None = None
        self.cap_speed: Decimal | None = None
        self.cap_width: int | None = None
        self.sta_speed: Decimal | None = None
        self.sta_width: int | None = None
        self.speed_note: str | None = None
        self.width_note: str | None = None
        if rest is not None:
            numeric = _NUMERIC_RE.match(rest)
            if numeric:  # lspci -n: "0302: 10de:2330 (rev a1)"
                self.vendor_id, self.device_id = numeric.group("vendor").lower(), numeric.group("device").lower()
                self.description = rest
                return
            found = _CLASS_RE.match(rest)
            if found:
                self.class_name, self.description = found.group("cls").strip(), found.group("desc").strip()
            else:
                self.description = rest
            ids = list(_IDS_RE.finditer(rest))
            if ids:  # lspci -nn: the last [vvvv:dddd] is the device's; [cccc] is the class
                self.vendor_id, self.device_id = ids[-1].group("vendor").lower(), ids[-1].group("device").lower()

    def build(self) -> LspciDevice:
        def downgraded(note: str | None, sta: object, cap: object) -> bool:
            if note is not None:
                return note == "downgraded"
            # Older lspci prints no (ok)/(downgraded) notes: compare with the capability.
            return sta is not None and cap is not None and sta < cap  # type: ignore[operator]

        speed_down = downgraded(self.speed_note, self.sta_speed, self.cap_speed)
        width_down = downgraded(self.width_note, self.sta_width, self.cap_width)
        return LspciDevice(
            bdf=self.bdf,
            class_name=self.class_name,
            description=self.description,
            vendor_id=self.vendor_id,
            device_id=self.device_id,
            numa_node=self.numa_node,
            kernel_driver=self.driver,
            link_cap_speed_gts=self.cap_speed,
            link_cap_width=self.cap_width,
            link_sta_speed_gts=self.sta_speed,
            link_sta_width=self.sta_width,
            link_cap_generation=pcie_generation(self.cap_speed),
            link_sta_generation=pcie_generation(self.sta_speed),
            speed_downgraded=speed_down,
            width_downgraded=width_down,
            downgraded=speed_down or width_down,
        )


def _speed(value: str | None) -> Decimal | None:
    return Decimal(value) if value else None  # the regex admits digits and one dot only


@register(TOOL, "lspci -vv[v]: per device PCIe LnkCap/LnkSta speed (GT/s), width, generation, downgrade",
          corpus=("lspci",))
def parse_lspci(text: str) -> list[LspciDevice]:
    """Parse ``lspci -vv``/``-vvv`` output (or a grep excerpt of its Lnk lines) into devices."""
    devices: list[_Builder] = []
    current: _Builder | None = None
    for line in split_lines(TOOL, text):
        if not line:
            continue
        first = line[0]
        if first not in " \t":
            device = _DEVICE_RE.match(line)
            if device:
                current = _Builder(device.group("bdf"), device.group("rest"))
                devices.append(current)
                continue
            dump = _HEXDUMP_RE.match(line)
            if dump and current is not None and current.vendor_id is None:
                # -x config space: bytes 0-1 vendor, 2-3 device, little-endian
                current.vendor_id = (dump.group("b1") + dump.group("b0")).lower()
                current.device_id = (dump.group("b3") + dump.group("b2")).lower()
            if current is None or current.bdf is not None:
                # grep excerpts may lose indentation; anything else unindented is not ours
                if "Lnk" not in line:
                    continue
        stripped = line.strip()
        if stripped.startswith("LnkCap:"):
            found = _LNKCAP_RE.match(stripped)
            if found:
                if current is None or (current.bdf is None and current.cap_width is not None):
                    current = _Builder(None, None)  # grep excerpt: each LnkCap starts the next device
                    devices.append(current)
                current.cap_speed = _speed(found.group("speed"))
                current.cap_width = int(found.group("width"))
        elif stripped.startswith("LnkSta:"):
            found = _LNKSTA_RE.match(stripped)
            if found:
                if current is None or (current.bdf is None and current.sta_width is not None):
                    current = _Builder(None, None)
                    devices.append(current)
                current.sta_speed = _speed(found.group("speed"))
                current.sta_width = int(found.group("width"))
                current.speed_note = found.group("speed_note")
                current.width_note = found.group("width_note")
        elif current is not None and stripped.startswith("NUMA node:"):
            value = stripped[len("NUMA node:"):].strip()
            if value.isascii() and value.isdigit():
                current.numa_node = int(value)
        elif current is not None and stripped.startswith("Kernel driver in use:"):
            current.driver = stripped[len("Kernel driver in use:"):].strip() or None
    if not devices:
        raise UnrecognizedOutput(TOOL, "no device line ('bb:dd.f class: ...') and no LnkCap/LnkSta line; is this lspci output?")
    return [device.build() for device in devices]
