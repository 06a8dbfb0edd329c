"""CUDA samples ``bandwidthTest``: host<->device and device<->device copy bandwidth.

Two layouts: the default table (``Host to Device Bandwidth, 1 Device(s)`` then
``Transfer Size (Bytes)  Bandwidth(GB/s)`` rows; quick mode has one 32 MB row,
range/shmoo modes many), and ``--csv`` lines
``bandwidthTest-H2D-Pinned, Bandwidth = 12.4 GB/s, Time = ... s, Size = N bytes, ...``.
Older samples print ``MB/s`` (really MiB/s); we convert to decimal GB/s.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from pytest_fabric.parsers.base import ToolReportedError, UnrecognizedOutput, register

__all__ = ["BandwidthSample", "BandwidthTestResult", "parse_cuda_bandwidth_test"]

TOOL = "cuda-bandwidthTest"

_DIRECTIONS = {
    "host to device": "H2D",
    "device to host": "D2H",
    "device to device": "D2D",
}
_SECTION = re.compile(r"^(Host to Device|Device to Host|Device to Device) Bandwidth", re.IGNORECASE)
_MEMORY = re.compile(r"^(PINNED|PAGEABLE)\s+Memory Transfers", re.IGNORECASE)
_UNIT = re.compile(r"Bandwidth\s*\((GB/s|MB/s)\)", re.IGNORECASE)
_ROW = re.compile(r"^(\d+)\s+([0-9]+(?:\.[0-9]+)?)$")
_CSV = re.compile(
    r"^bandwidthTest-(?P<dir>H2D|D2H|D2D)-(?P<mem>\w+),\s*Bandwidth\s*=\s*(?P<bw>[0-9.]+)\s*(?P<unit>GB/s|MB/s)"
    r".*?Size\s*=\s*(?P<size>\d+)\s*bytes",
    re.IGNORECASE,
)
_DEVICE = re.compile(r"^Device\s+(\d+):\s*(.+?)\s*$")
_RESULT = re.compile(r"^Result\s*=\s*(\w+)")


@dataclass(frozen=True)
class BandwidthSample:
    """One measurement: direction ``H2D``/``D2H``/``D2D``, memory ``pinned``/``pageable``, size, GB/s."""

    direction: str
    memory: str
    size_bytes: int
    bandwidth_gbytes_per_s: float


@dataclass(frozen=True)
class BandwidthTestResult:
    """All samples in order, the devices named, the mode line and the final ``Result = PASS``."""

    devices: dict[int, str]
    mode: str | None
    samples: tuple[BandwidthSample, ...]
    passed: bool | None

    def bandwidth_gbytes_per_s(self, direction: str, *, size_bytes: int | None = None) -> float:
        """GB/s for ``direction`` (``H2D``/``D2H``/``D2D``) at ``size_bytes``, or at the largest size measured."""
        samples = [s for s in self.samples if s.direction == direction.upper()]
        if size_bytes is not None:
            samples = [s for s in samples if s.size_bytes == size_bytes]
        if not samples:
            raise KeyError(f"no {direction} sample{f' of {size_bytes} bytes' if size_bytes else ''} in the bandwidthTest output")
        largest = max(s.size_bytes for s in samples)
        return max(s.bandwidth_gbytes_per_s for s in samples if s.size_bytes == largest)


def _gbytes(value: str, unit: str) -> float:
    # Old samples computed "MB/s" as bytes / 2**20 per second; current ones print
    # decimal GB/s (bytes / 1e9).  Report both in decimal GB/s.
    return float(value) * 2**20 / 1e9 if unit.upper() == "MB/S" else float(value)


@register(TOOL, "CUDA samples bandwidthTest: H2D/D2H/D2D GB/s per transfer size (table or --csv)", corpus=("cuda-bandwidthTest",))
def parse_cuda_bandwidth_test(text: str) -> BandwidthTestResult:
    """Parse ``bandwidthTest`` output (quick/range/shmoo, table or ``--csv``) into a :class:`BandwidthTestResult`."""
    devices: dict[int, str] = {}
    samples: list[BandwidthSample] = []
    mode: str | None = None
    passed: bool | None = None
    direction: str | None = None
    memory = "pinned"
    unit = "GB/s"
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line:
            continue
        if match := _CSV.match(line):
            samples.append(
                BandwidthSample(match["dir"].upper(), match["mem"].lower(), int(match["size"]), _gbytes(match["bw"], match["unit"]))
            )
        elif match := _DEVICE.match(line):
            devices[int(match.group(1))] = match.group(2)
        elif line.endswith(" Mode") and len(line.split()) == 2:
            mode = line.split()[0].lower()
        elif match := _SECTION.match(line):
            direction = _DIRECTIONS[match.group(1).lower()]
        elif match := _MEMORY.match(line):
            memory = match.group(1).lower()
        elif match := _UNIT.search(line):
            unit = match.group(1)
        elif (match := _ROW.match(line)) and direction is not None:
            samples.append(BandwidthSample(direction, memory, int(match.group(1)), _gbytes(match.group(2), unit)))
        elif match := _RESULT.match(line):
            passed = match.group(1).upper() == "PASS"
        elif line.lower().startswith(("cudaerror", "cuda error", "error:", "no cuda", "!!!!!")):
            raise ToolReportedError(TOOL, line, line=number)
    if not samples:
        if passed is False:
            raise ToolReportedError(TOOL, "bandwidthTest reported Result = FAIL with no measurement")
        raise UnrecognizedOutput(TOOL, "no bandwidth rows or bandwidthTest-*, Bandwidth = ... lines found")
    return BandwidthTestResult(devices, mode, tuple(samples), passed)
