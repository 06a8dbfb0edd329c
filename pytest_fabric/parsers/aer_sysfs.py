"""PCIe AER counters from sysfs: ``aer_dev_correctable``, ``aer_dev_fatal``, ``aer_dev_nonfatal``.

Linux 4.19 and later keep, per AER-capable device, how many errors of each kind it reported
(Documentation/ABI/testing/sysfs-bus-pci-devices-aer_stats); each file is ``Name count`` lines and
a total (drivers/pci/pcie/aer.c prints the names of ``aer_correctable_error_string`` and
``aer_uncorrectable_error_string``)::

    RxErr 0
    BadTLP 3
    ...
    TOTAL_ERR_COR 3

The probe (checks/pcie_errors.py) reads the files of several devices in one command and frames
each device and file, which this parser reads::

    ==> 0000:18:00.0 0x10de 0x030200 <==
    --- aer_dev_correctable
    RxErr 0
    ...

A device without the files (no AER capability, or a kernel without CONFIG_PCIEAER) has its
header and no file: its counts are None, never 0.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from pytest_fabric.parsers._textscan import split_lines, to_int
from pytest_fabric.parsers.base import ParseError, UnrecognizedOutput, register

__all__ = ["AER_FILES", "AerDevice", "parse_aer_file", "parse_aer_sysfs"]

TOOL = "aer-sysfs"

#: the files read, and the total line each ends with
AER_FILES = {"aer_dev_correctable": "TOTAL_ERR_COR", "aer_dev_fatal": "TOTAL_ERR_FATAL",
             "aer_dev_nonfatal": "TOTAL_ERR_NONFATAL"}

_DEVICE = re.compile(r"^==> (?P<bdf>[0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7])"
                     r"(?: (?P<vendor>0x[0-9a-fA-F]{4}))?(?: (?P<cls>0x[0-9a-fA-F]{6}))? <==$")
_FILE = re.compile(r"^--- (?P<name>aer_dev_[a-z]+)$")
_COUNT = re.compile(r"^(?P<name>[A-Za-z_][A-Za-z0-9_]*) (?P<value>[0-9]+)$")


@dataclass(frozen=True)
class AerDevice:
    """One PCI function's AER counts by file, as read; a file the device lacks is absent."""

    bdf: str  # 0000:18:00.0, lower case
    vendor: str | None = None  # 0x10de
    pci_class: str | None = None  # 0x030200
    files: dict[str, dict[str, int]] = field(default_factory=dict)

    def total(self, name: str) -> int | None:
        """The file's ``TOTAL_ERR_*`` line (its counts summed where a kernel wrote none); None without the file."""
        counts = self.files.get(name)
        if counts is None:
            return None
        total = AER_FILES[name]
        return counts[total] if total in counts else sum(v for k, v in counts.items() if not k.startswith("TOTAL_"))

    @property
    def correctable(self) -> int | None:
        return self.total("aer_dev_correctable")

    @property
    def uncorrectable(self) -> int | None:
        """Fatal and non-fatal together; None when neither file is there."""
        fatal, nonfatal = self.total("aer_dev_fatal"), self.total("aer_dev_nonfatal")
        if fatal is None and nonfatal is None:
            return None
        return (fatal or 0) + (nonfatal or 0)

    @property
    def has_aer(self) -> bool:
        return bool(self.files)


def parse_aer_file(text: str, *, line_offset: int = 0) -> dict[str, int]:
    """One ``aer_dev_*`` file: name -> count (``TOTAL_ERR_*`` included)."""
    counts: dict[str, int] = {}
    for number, line in enumerate(split_lines(TOOL, text), start=1 + line_offset):
        if not line.strip():
            continue
        m = _COUNT.match(line.strip())
        if not m:
            raise ParseError(TOOL, f"not a 'Name count' line: {line.strip()[:80]!r}", line=number)
        counts[m.group("name")] = to_int(TOOL, m.group("value"), line=number, what=m.group("name"))
    return counts


@register(TOOL, "sysfs aer_dev_correctable/fatal/nonfatal of several devices, as the pcie_errors probe frames them",
)
def parse_aer_sysfs(text: str) -> list[AerDevice]:
    """Each ``==> BDF VENDOR CLASS <==`` block as an :class:`AerDevice`; the output of no device at all
    (``for`` over an empty /sys/bus/pci/devices) is an empty list."""
    devices: list[AerDevice] = []
    current: str | None = None
    for number, line in enumerate(split_lines(TOOL, text) if text.strip() else [], start=1):
        stripped = line.strip()
        if not stripped:
            continue
        if m := _DEVICE.match(stripped):
            devices.append(AerDevice(m.group("bdf").lower(), m.group("vendor"), m.group("cls")))
            current = None
            continue
        if m := _FILE.match(stripped):
            if not devices:
                raise UnrecognizedOutput(TOOL, f"{stripped!r} before any '==> BDF <==' line", line=number)
            if m.group("name") not in AER_FILES:
                raise ParseError(TOOL, f"unknown AER file {m.group('name')!r}", line=number)
            current = m.group("name")
            devices[-1].files[current] = {}
            continue
        if current is None:
            raise UnrecognizedOutput(TOOL, f"expected '==> BDF <==' or '--- aer_dev_*', found {stripped[:80]!r}",
                                     line=number)
        devices[-1].files[current].update(parse_aer_file(stripped, line_offset=number - 1))
    return devices
