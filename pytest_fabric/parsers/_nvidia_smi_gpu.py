"""The per-GPU facts that ``nvidia-smi -q`` and ``nvidia-smi -q -x`` both report.

Shared so that a probe may use either form and the checks read one type.  The
module name starts with ``_`` so the parser registry does not import it as a tool.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

__all__ = ["EccCounts", "GpuInfo", "NvidiaSmiReport", "to_bool", "to_int", "width_to_int"]

_NOT_A_VALUE = {
    "",
    "N/A",
    "[N/A]",
    "Unknown",
    "[Unknown]",
    "Not Supported",
    "[Not Supported]",
    "Requested functionality has been deprecated",
}


@dataclass(frozen=True)
class EccCounts:
    """One of nvidia-smi's ECC counter sets: ``Volatile`` (since the driver loaded) or ``Aggregate`` (the GPU's life).

    535+ drivers split SRAM uncorrectable errors into ``Parity`` and ``SEC-DED``; both
    are summed into ``sram_uncorrectable``, as older drivers print it.  Drivers before
    the SRAM/DRAM split print ``Single Bit``/``Double Bit`` totals, read as the
    correctable and uncorrectable DRAM counts.  ``None`` where nvidia-smi shows ``N/A``.
    """

    sram_correctable: int | None = None
    sram_uncorrectable: int | None = None
    dram_correctable: int | None = None
    dram_uncorrectable: int | None = None

    @property
    def uncorrectable(self) -> int | None:
        """SRAM and DRAM uncorrectable errors together; None when neither is shown."""
        known = [n for n in (self.sram_uncorrectable, self.dram_uncorrectable) if n is not None]
        return sum(known) if known else None

    @property
    def correctable(self) -> int | None:
        """SRAM and DRAM correctable errors together; None when neither is shown."""
        known = [n for n in (self.sram_correctable, self.dram_correctable) if n is not None]
        return sum(known) if known else None


def ecc_counts(
    sram_correctable: str | None,
    sram_uncorrectable: list[str | None],
    dram_correctable: str | None,
    dram_uncorrectable: str | None,
) -> EccCounts | None:
    """The counts as read (``sram_uncorrectable``: every SRAM uncorrectable field shown); None when all are N/A."""
    sram_unc = [n for n in (to_int(v) for v in sram_uncorrectable) if n is not None]
    counts = EccCounts(
        to_int(sram_correctable),
        sum(sram_unc) if sram_unc else None,
        to_int(dram_correctable),
        to_int(dram_uncorrectable),
    )
    return None if counts == EccCounts() else counts


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
    ecc_mode_current: str | None = None
    ecc_volatile: EccCounts | None = None
    ecc_aggregate: EccCounts | None = None
    retired_pages_single_bit: int | None = None
    retired_pages_double_bit: int | None = None
    retired_pages_pending: bool | None = None
    remapped_rows_correctable: int | None = None
    remapped_rows_uncorrectable: int | None = None
    remapped_rows_pending: bool | None = None
    remapped_rows_failure: bool | None = None
    # NVLink fabric registration on NVSwitch systems (HGX H100/H200/B200, GB200); N/A elsewhere.
    fabric_state: str | None = None  # Not Started | In Progress | Completed
    fabric_status: str | None = None  # Success, or why not (Insufficient Resources ...)
    fabric_clique_id: int | None = None
    fabric_cluster_uuid: str | None = None
    fabric_health_summary: str | None = None
    fabric_health: dict[str, str] = field(
        default_factory=dict
    )  # Bandwidth, Route Unhealthy, ... as printed

    @property
    def mig_enabled(self) -> bool:
        """True when MIG mode is currently ``Enabled``."""
        return (self.mig_mode_current or "").lower() == "enabled"

    @property
    def memory_faults(self) -> tuple[str, ...]:
        """What makes this GPU's memory unfit to run on, in nvidia-smi's terms (empty when nothing does).

        Uncorrectable errors since the driver loaded, a row remap or page retirement
        waiting for a GPU reset, and a failed row remap (NVIDIA's memory error
        management guide: the last is an RMA condition).  Correctable and lifetime
        (aggregate) counts alone are not faults.
        """
        out = []
        volatile = self.ecc_volatile
        if volatile is not None and volatile.uncorrectable:
            parts = [
                f"{kind} {n}"
                for kind, n in (
                    ("SRAM", volatile.sram_uncorrectable),
                    ("DRAM", volatile.dram_uncorrectable),
                )
                if n
            ]
            out.append(
                f"{volatile.uncorrectable} uncorrectable volatile ECC error(s) ({', '.join(parts)})"
            )
        if self.remapped_rows_pending:
            out.append("row remapping pending (reset the GPU)")
        if self.remapped_rows_failure:
            out.append("row remapping failed")
        if self.retired_pages_pending:
            out.append("page retirement pending (reset the GPU)")
        return tuple(out)

    @property
    def fabric_problem(self) -> str | None:
        """Why the GPU is not registered with the NVLink fabric, or None (registered, or no fabric state shown)."""
        if self.fabric_state is None:
            return None
        if (
            self.fabric_state.lower() == "completed"
            and (self.fabric_status or "").lower() == "success"
        ):
            return None
        return f"NVLink fabric state {self.fabric_state}, status {self.fabric_status or 'N/A'}"


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
    skipped: tuple[str, ...] = ()
    """Lines read past without being understood (``WARNING: infoROM is corrupted ...``), each once."""
    skipped_count: int = 0

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
        raise KeyError(
            f"no GPU {bus_id_or_index!r}; shown: {', '.join(g.bus_id or '?' for g in self.gpus)}"
        )


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


def to_bool(value: str | None) -> bool | None:
    """``Yes``/``No`` as True/False; None for placeholders and other words."""
    value = clean(value)
    if value is None:
        return None
    return {"yes": True, "no": False}.get(value.lower())


_WIDTH = re.compile(r"^x?(\d+)x?$", re.IGNORECASE)


def width_to_int(value: str | None) -> int | None:
    """A PCIe link width as printed (``16x``, ``x16``) as an int."""
    value = clean(value)
    if value is None:
        return None
    match = _WIDTH.match(value)
    return int(match.group(1)) if match else None
