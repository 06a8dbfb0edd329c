"""The per-GPU facts that ``nvidia-smi -q`` and ``nvidia-smi -q -x`` both report.

Shared so that a probe may use either form and the checks read one type.  The
module name starts with ``_`` so the parser registry does not import it as a tool.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["GpuInfo", "NvidiaSmiReport", "to_int", "width_to_int"]

_NOT_A_VALUE = {"", "N/A", "[N/A]", "Unknown", "[Unknown]", "Not Supported", "[Not Supported]", "Requested functionality has been deprecated"}


@dataclass(frozen=True)
class GpuInfo:
    """One GPU as nvidia-smi describes it.  ``None`` where the field is absent or ``N/A``.

    ``pcie_generation_current``/``_max`` are what nvidia-smi calls ``Current``/``Max``
    (the link as trained, and the most both ends support); the ``device_``/``host_``
    variants appear on newer drivers.  An idle GPU may train its link down to Gen1 to
    save power, so a generation check should run while the GPU is busy or compare
    ``max``; width does not change with load.
    """

    # Position in this output, 0-based: nvidia-smi's own index for a full ``-q``, but
    # always 0 for ``-q -i N``; ``minor_number`` or ``bus_id`` identify the GPU.
    index: int
    bus_id: str | None
    product_name: str | None
    product_architecture: str | None = None
    uuid: str | None = None
    serial_number: str | None = None
    minor_number: int | None = None
    module_id: int | None = None
    pcie_generation_current: int | None = None
    pcie_generation_max: int | None = None
    pcie_generation_device_current: int | None = None
    pcie_generation_device_max: int | None = None
    pcie_generation_host_max: int | None = None
    pcie_link_width_current: int | None = None
    pcie_link_width_max: int | None = None
    pcie_replays_since_reset: int | None = None
    mig_mode_current: str | None = None
    mig_mode_pending: str | None = None
    mig_device_count: int = 0

    @property
    def mig_enabled(self) -> bool:
        """True when MIG mode is currently ``Enabled``."""
        return (self.mig_mode_current or "").lower() == "enabled"


@dataclass(frozen=True)
class NvidiaSmiReport:
    """A whole ``nvidia-smi -q`` log: driver facts and the GPUs shown.

    ``attached_gpus`` is how many GPUs the driver sees; ``gpus`` may hold fewer
    (``-q -i N`` shows one).
    """

    driver_version: str | None
    cuda_version: str | None
    attached_gpus: int | None
    timestamp: str | None
    gpus: tuple[GpuInfo, ...]

    def gpu(self, bus_id_or_index: str | int) -> GpuInfo:
        """The GPU with that position in the output, or that PCI bus id (case-insensitive)."""
        if isinstance(bus_id_or_index, int):
            for gpu in self.gpus:
                if gpu.index == bus_id_or_index:
                    return gpu
        else:
            for gpu in self.gpus:
                if (gpu.bus_id or "").lower() == bus_id_or_index.lower():
                    return gpu
        raise KeyError(f"no GPU {bus_id_or_index!r}; shown: {', '.join(g.bus_id or '?' for g in self.gpus)}")


def clean(value: str | None) -> str | None:
    """The value, or None for nvidia-smi's placeholders (``N/A``, ``[Not Supported]``)."""
    if value is None:
        return None
    value = value.strip()
    return None if value in _NOT_A_VALUE else value


def to_int(value: str | None) -> int | None:
    """An integer field; None for placeholders or text that is not a number."""
    value = clean(value)
    if value is None:
        return None
    try:
        return int(value, 0) if value.lower().startswith("0x") else int(value)
    except ValueError:
        return None


_WIDTH = re.compile(r"^x?(\d+)x?$", re.IGNORECASE)


def width_to_int(value: str | None) -> int | None:
    """A PCIe link width as printed (``16x``, ``x16``) as an int."""
    value = clean(value)
    if value is None:
        return None
    match = _WIDTH.match(value)
    return int(match.group(1)) if match else None
