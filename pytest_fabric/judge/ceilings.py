"""A profile must not ask for more than the hardware it describes can carry: checked at load.

Each expected floor is held against the ceiling the profile itself implies, and an impossible one
is refused with the key, the ceiling and how it was computed (a bundled floor that four HDR ports
cannot carry failed every pair on the hardware the profile describes).  The ceilings are line
rates, the most a link can move, never a typical figure.  Which bounds a check's floor is the
check's declaration (``Check.ceiling``), so this module names no check:

- ``port_line``: one port's ``port_rate`` (a pair's rail, or the NIC TCP runs over);
- ``all_rails``: ``ports`` x ``port_rate``, every rail of a node busy at once (NCCL's bus bandwidth
  for all_reduce is what each rank's links carry);
- ``gpu_pcie``: the PCIe link ``gpu_pcie`` states, generation x width, after the link encoding
  (PCI-SIG: 8b/10b to Gen2, 128b/130b from Gen3; Gen6 is FLIT, taken as Gen5's doubled);
- ``nvlink``: per GPU pair, one direction, the GPU's NVLink total for the model ``gpu_model`` names
  (A100: 12 NVLink3 links x 25 GB/s = 300 GB/s each way; H100: 18 NVLink4 x 25 GB/s = 450 GB/s;
  NVIDIA's A100 and H100 datasheets give 600 and 900 GB/s both ways);
- and for every key: a share (``90% line``, ``min: 90%`` of a ratio) is at most 100%.

Pure: it reads a validated profile document and the declared ceilings, nothing else.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from decimal import Decimal
from typing import Any, Literal

from pytest_fabric.config.units import Quantity

__all__ = ["Ceiling", "impossible", "pcie_gbytes", "NVLINK_GBYTES"]

#: one direction, per PCIe lane, GB/s after encoding (PCI-SIG base specifications)
_PCIE_LANE_GBYTES = {1: Decimal("0.25"), 2: Decimal("0.5"), 3: Decimal("0.985"), 4: Decimal("1.969"),
                     5: Decimal("3.938"), 6: Decimal("7.877"), 7: Decimal("15.754")}
#: a GPU's NVLink bandwidth one way, GB/s, by the model name's substring (datasheets: both ways / 2)
NVLINK_GBYTES = {"A100": Decimal(300), "H100": Decimal(450), "H200": Decimal(450), "B200": Decimal(900),
                 "V100": Decimal(150)}


def pcie_gbytes(generation: int, width: int) -> Decimal:
    """A PCIe link's line rate one way, GB/s."""
    return _PCIE_LANE_GBYTES[generation] * width


def _floor(spec: Any) -> Quantity | None:
    floor = getattr(spec, "min", None)
    return floor if isinstance(floor, Quantity) else None


def _shares(document: Any) -> Iterator[tuple[tuple[str, ...], str]]:
    for layer in ("software", "intra_node", "inter_node", "storage", "egress"):
        section = getattr(document, layer)
        for name in type(section).model_fields:
            floor = _floor(getattr(section, name))
            if floor is not None and floor.dimension.name in ("LINE_SHARE", "PERCENT") and floor.value > 1:
                yield ((layer, name, "min"), f"{layer}.{name}.min: {floor.display()} is more than all of it: "
                                             "a share is at most 100%")


#: what bounds a check's floor (``Check.ceiling``), each from what the profile states of the hardware
Ceiling = Literal["port_line", "all_rails", "gpu_pcie", "nvlink"]


def impossible(document: Any, ceilings: Mapping[tuple[str, str], Ceiling] | None = None) -> list[tuple[tuple[str, ...], str]]:
    """(location of the key, why) for every expected value above the ceiling the profile implies.
    ``ceilings``: (layer, key) -> what bounds that key's floor, as the run's checks declare it."""
    out = list(_shares(document))
    inter, intra = document.inter_node, document.intra_node
    port_rate = getattr(inter, "port_rate", None)
    rate = port_rate.min if port_rate is not None else None
    ports = getattr(inter, "ports", None)
    count = ports.stated if ports is not None else None
    gpu_pcie = getattr(intra, "gpu_pcie", None)
    gpu_model = getattr(intra, "gpu_model", None)
    model = gpu_model.value if gpu_model is not None else ""
    nvlink = next((v for k, v in NVLINK_GBYTES.items() if k.lower() in model.lower()), None)

    def above(loc: tuple[str, ...], floor: Quantity, ceiling: Decimal, unit: str, how: str) -> None:
        if floor.to(unit) > ceiling:
            key = ".".join(loc)
            out.append((loc, f"{key}: {floor.display(unit)} is more than this profile's hardware carries: "
                             f"{_fmt(ceiling)} {unit} ({how}); lower it, or fix the hardware it states"))

    for (layer, name), kind in (ceilings or {}).items():
        floor = _floor(getattr(getattr(document, layer), name, None))
        if floor is None or floor.dimension.name != "BANDWIDTH":
            continue
        loc = (layer, name, "min")
        if kind == "port_line" and rate is not None and rate.dimension.name == "BANDWIDTH" and not floor.is_line_share:
            above(loc, floor, rate.to("Gb/s"), "Gb/s", f"one port's line, inter_node.port_rate {rate.display('Gb/s')}")
        elif kind == "all_rails" and rate is not None and rate.dimension.name == "BANDWIDTH" and count:
            above(loc, floor, rate.to("GB/s") * count, "GB/s",
                  f"inter_node.ports {count} x port_rate {rate.display('Gb/s')} = {_fmt(rate.to('GB/s') * count)} GB/s, "
                  "every rail of a node at its line rate")
        elif kind == "gpu_pcie" and gpu_pcie is not None:
            above(loc, floor, pcie_gbytes(gpu_pcie.generation, gpu_pcie.width), "GB/s",
                  f"intra_node.gpu_pcie Gen{gpu_pcie.generation} x{gpu_pcie.width}, one way after its line encoding")
        elif kind == "nvlink" and nvlink is not None:
            above(loc, floor, nvlink, "GB/s", f"an {model} GPU's NVLink total one way (its datasheet's both-ways figure / 2)")
    return out


def _fmt(value: Decimal) -> str:
    text = f"{value:.3f}".rstrip("0").rstrip(".")
    return text or "0"
