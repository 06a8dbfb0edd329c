"""``lspci -vvv``: PCIe Access Control Services (ACS) of each bridge or port that has them.

A device line starts with its address; the ACS capability follows as::

    Capabilities: [220 v1] Access Control Services
        ACSCap: SrcValid+ TransBlk+ ReqRedir+ CmpltRedir+ UpstreamFwd+ EgressCtrl- DirectTrans-
        ACSCtl: SrcValid+ TransBlk- ReqRedir+ CmpltRedir+ UpstreamFwd+ EgressCtrl- DirectTrans-

``ACSCtl`` is what is switched on. Request or completion redirection (``ReqRedir+``,
``CmpltRedir+``) sends peer-to-peer traffic up to the root complex, which defeats GPUDirect
between a GPU and a NIC under the same PCIe switch (NVIDIA's GPUDirect RDMA and NCCL
troubleshooting guides ask for ACS off there). Reading it needs root: run as another user,
lspci prints the capability line with ``<access denied>`` and no ACS lines.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from pytest_fabric.parsers._textscan import split_lines
from pytest_fabric.parsers.base import UnrecognizedOutput, register

__all__ = ["AcsControl", "PciDevice", "LspciAcs", "parse_lspci_acs", "REDIRECT_BITS"]

TOOL = "lspci-acs"

_DEVICE = re.compile(r"^(?P<bdf>(?:[0-9a-fA-F]{4}:)?[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7])\s+(?P<description>.*)$")
_ACS = re.compile(r"^\s+ACS(?P<kind>Cap|Ctl):\s*(?P<flags>.*)$")
_FLAG = re.compile(r"([A-Za-z]+)([+-])")
_BUS = re.compile(r"^\s+Bus: primary=(?P<primary>[0-9a-fA-F]+), secondary=(?P<secondary>[0-9a-fA-F]+), "
                  r"subordinate=(?P<subordinate>[0-9a-fA-F]+)")

#: the ACSCtl bits that make peer traffic detour through the root complex
REDIRECT_BITS = ("SrcValid", "ReqRedir", "CmpltRedir", "UpstreamFwd", "EgressCtrl")


@dataclass(frozen=True)
class AcsControl:
    """One device's ACS capability and control bits (name -> on)."""

    bdf: str
    description: str
    capability: dict[str, bool]
    control: dict[str, bool]
    #: a bridge's ``Bus: primary=.., secondary=.., subordinate=..``: the buses behind it
    secondary_bus: int | None = None
    subordinate_bus: int | None = None

    @property
    def bus(self) -> int:
        """The device's own bus number (``15`` of ``0000:15:01.0``)."""
        return int(self.bdf.split(":")[-2], 16)

    def above(self, bdf: str) -> bool:
        """True when device ``bdf`` sits behind this bridge (its bus in secondary..subordinate)."""
        if self.secondary_bus is None or self.subordinate_bus is None:
            return False
        mine, theirs = self.bdf.split(":"), bdf.split(":")
        if len(mine) == 3 and len(theirs) == 3 and mine[0].lower() != theirs[0].lower():
            return False  # another PCI domain
        return self.secondary_bus <= int(theirs[-2], 16) <= self.subordinate_bus

    @property
    def enabled(self) -> tuple[str, ...]:
        """The redirecting controls that are on (empty when ACS is off)."""
        return tuple(bit for bit in REDIRECT_BITS if self.control.get(bit))


@dataclass(frozen=True)
class PciDevice:
    """A device line: address and description (``3D controller: NVIDIA Corporation ...``)."""

    bdf: str
    description: str


@dataclass(frozen=True)
class LspciAcs:
    """Every device lspci listed, and the ACS state of those that have ACS."""

    devices: tuple[PciDevice, ...]
    acs: tuple[AcsControl, ...]


@register(TOOL, "lspci -vvv: per device ACSCap/ACSCtl (PCIe Access Control Services) bits",
          corpus=("lspci/hgx-h100-8gpu-cx7-full-vvv.txt",))
def parse_lspci_acs(text: str) -> LspciAcs:
    """Every device, and each one with an ``ACSCtl`` line (with the buses behind it, for bridges)."""
    found: list[AcsControl] = []
    devices: list[PciDevice] = []
    device: tuple[str, str] | None = None
    cap: dict[str, bool] = {}
    buses: tuple[int, int] | None = None
    saw_device = False
    for line in split_lines(TOOL, text):
        head = _DEVICE.match(line)
        if head:
            device, cap, buses, saw_device = (head.group("bdf"), head.group("description").strip()), {}, None, True
            devices.append(PciDevice(*device))
            continue
        bus = _BUS.match(line)
        if bus:
            buses = (int(bus.group("secondary"), 16), int(bus.group("subordinate"), 16))
            continue
        acs = _ACS.match(line)
        if acs is None or device is None:
            continue
        flags = {name: sign == "+" for name, sign in _FLAG.findall(acs.group("flags"))}
        if acs.group("kind") == "Cap":
            cap = flags
        else:
            found.append(AcsControl(device[0], device[1], cap, flags, *(buses or (None, None))))
    if not saw_device:
        raise UnrecognizedOutput(TOOL, "no device line ('BB:DD.F description'); is this lspci -vvv output?")
    return LspciAcs(tuple(devices), tuple(found))
