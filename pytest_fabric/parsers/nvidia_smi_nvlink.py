"""``nvidia-smi nvlink --status`` / ``nvlink -s``: per GPU, the speed of each NVLink.

A GPU block starts with ``GPU N: <name> (UUID: ...)`` and lists ``Link K: 25 GB/s``
or ``Link K: <inactive>``.  Two one-line answers replace the link list:

* ``Device does not have or support Nvlink``: a PCIe card; a valid result with no links
  (``nvlink_supported=False``).
* ``NVML: Unable to retrieve NVLink information as all links are inactive``: an
  NVLink GPU whose links are all down.  We return it as a GPU with
  ``all_links_inactive=True`` rather than raising, so that the other GPUs of the
  same output are still read and the check can *fail* that one GPU (a raised
  error would make the check an "error", i.e. "could not measure").
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from pytest_fabric.parsers.base import ToolReportedError, UnrecognizedOutput, register

__all__ = ["NvlinkLink", "NvlinkGpu", "NvlinkStatus", "parse_nvidia_smi_nvlink"]

TOOL = "nvidia-smi-nvlink"

_GPU = re.compile(r"^GPU\s+(\d+):\s*(.*?)\s*(?:\(UUID:\s*([^)]*)\))?\s*$")
_LINK = re.compile(r"^Link\s+(\d+)\s*:\s*(.*?)\s*$")
_SPEED = re.compile(r"^([0-9]+(?:\.[0-9]+)?)\s*GB/s$")
_NOT_SUPPORTED = "does not have or support nvlink"
_ALL_INACTIVE = "all links are inactive"


@dataclass(frozen=True)
class NvlinkLink:
    """One NVLink: its number and speed in GB/s (gigabytes), ``None`` when ``<inactive>``."""

    link: int
    speed_gbytes_per_s: float | None

    @property
    def active(self) -> bool:
        """True when the link reports a speed."""
        return self.speed_gbytes_per_s is not None


@dataclass(frozen=True)
class NvlinkGpu:
    """One GPU block.  ``links`` is empty when NVLink is unsupported or all links are inactive."""

    index: int
    name: str
    uuid: str | None
    links: tuple[NvlinkLink, ...]
    nvlink_supported: bool = True
    all_links_inactive: bool = False

    @property
    def active_links(self) -> tuple[NvlinkLink, ...]:
        """The links that report a speed."""
        return tuple(link for link in self.links if link.active)

    @property
    def inactive_links(self) -> tuple[NvlinkLink, ...]:
        """The links shown as ``<inactive>``."""
        return tuple(link for link in self.links if not link.active)

    @property
    def total_speed_gbytes_per_s(self) -> float:
        """Sum of the active links' speeds (GB/s, one direction)."""
        return sum((link.speed_gbytes_per_s or 0.0 for link in self.links), 0.0)


@dataclass(frozen=True)
class NvlinkStatus:
    """All GPU blocks in the output, in order."""

    gpus: tuple[NvlinkGpu, ...]

    def gpu(self, index: int) -> NvlinkGpu:
        """The block of GPU ``index`` (nvidia-smi's index, as printed)."""
        for gpu in self.gpus:
            if gpu.index == index:
                return gpu
        raise KeyError(f"no GPU {index} in the nvlink status; shown: {[g.index for g in self.gpus]}")


@dataclass
class _Block:
    index: int
    name: str
    uuid: str | None
    links: list[NvlinkLink] = field(default_factory=list)
    supported: bool = True
    inactive: bool = False


@register(TOOL, "nvidia-smi nvlink --status / -s: per-GPU NVLink speeds, inactive links, no-NVLink devices", corpus=("nvidia-smi-nvlink",))
def parse_nvidia_smi_nvlink(text: str) -> NvlinkStatus:
    """Parse ``nvidia-smi nvlink --status`` into an :class:`NvlinkStatus`.

    Link lines before the first ``GPU N:`` header (a capture cut mid-block) are ignored.
    """
    blocks: list[_Block] = []
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line:
            continue
        gpu = _GPU.match(line)
        if gpu:
            blocks.append(_Block(int(gpu.group(1)), gpu.group(2), gpu.group(3)))
            continue
        if not blocks:
            continue
        block = blocks[-1]
        lowered = line.lower()
        if _NOT_SUPPORTED in lowered:
            block.supported = False
            continue
        if _ALL_INACTIVE in lowered:
            block.inactive = True
            continue
        link = _LINK.match(line)
        if link:
            value = link.group(2)
            speed = _SPEED.match(value)
            if speed:
                block.links.append(NvlinkLink(int(link.group(1)), float(speed.group(1))))
            elif "inactive" in value.lower():
                block.links.append(NvlinkLink(int(link.group(1)), None))
            else:
                raise UnrecognizedOutput(TOOL, f"link {link.group(1)}: unreadable speed {value!r}", line=number)
            continue
        if lowered.startswith(("nvml:", "failed", "error", "unable")):
            raise ToolReportedError(TOOL, f"GPU {block.index}: {line}", line=number)
        # Anything else (a stray shell line) is ignored rather than fatal: the
        # link lines are what the checks need.
    if not blocks:
        raise UnrecognizedOutput(TOOL, "no 'GPU N: <name> (UUID: ...)' line found")
    gpus = [
        NvlinkGpu(b.index, b.name, b.uuid, tuple(b.links), nvlink_supported=b.supported, all_links_inactive=b.inactive)
        for b in blocks
    ]
    return NvlinkStatus(tuple(gpus))
