"""``nvidia-smi --query-gpu=FIELDS --format=csv[,noheader][,nounits]``: one CSV row per GPU.

The header names each field, with its unit in brackets (``memory.used [MiB]``);
values carry the unit too unless ``nounits`` was given (``1235 MiB`` or ``1235``).
Unavailable values print as ``[N/A]`` / ``[Not Supported]``; we store them as
``None``.  Without a header (``noheader``) the caller passes the field list.
"""

from __future__ import annotations

import csv
import re
from collections.abc import Sequence
from dataclasses import dataclass

from pytest_fabric.parsers.base import ToolReportedError, UnrecognizedOutput, register

__all__ = ["QueryGpuRow", "QueryGpuResult", "parse_nvidia_smi_query_gpu"]

TOOL = "nvidia-smi-query-gpu"

_HEADER_FIELD = re.compile(r"^(?P<name>[A-Za-z_][\w.]*)(?:\s*\[(?P<unit>[^\]]*)\])?$")
_PLACEHOLDER = re.compile(r"^\[?(N/A|Not Supported|Unknown Error|Insufficient Permissions|GPU is lost|Unknown)\]?$", re.IGNORECASE)
_TOOL_ERRORS = ("Field \"", "is not a valid field", "NVIDIA-SMI has failed", "No devices were found")


@dataclass(frozen=True)
class QueryGpuRow:
    """One GPU's row.  ``values`` maps the field name without its unit (``memory.used``)
    to the value without the unit (``"1235"``), ``None`` for ``[N/A]``-style placeholders."""

    values: dict[str, str | None]
    units: dict[str, str]

    def get(self, field: str) -> str | None:
        """The raw value of ``field`` (``KeyError`` if the query did not ask for it)."""
        try:
            return self.values[field]
        except KeyError:
            raise KeyError(f"field {field!r} was not queried; queried: {', '.join(self.values)}") from None

    def get_int(self, field: str) -> int | None:
        """``field`` as an int; None when unavailable or not a whole number."""
        value = self.get(field)
        try:
            return None if value is None else int(value)
        except ValueError:
            return None

    def get_float(self, field: str) -> float | None:
        """``field`` as a float; None when unavailable or not a number."""
        value = self.get(field)
        try:
            return None if value is None else float(value)
        except ValueError:
            return None

    @property
    def index(self) -> int | None:
        """``index``: nvidia-smi's GPU index."""
        return self.get_int("index") if "index" in self.values else None

    @property
    def name(self) -> str | None:
        """``name``: the product name (``NVIDIA H100 80GB HBM3``)."""
        return self.values.get("name")

    @property
    def pci_bus_id(self) -> str | None:
        """``pci.bus_id`` (``00000000:00:09.0``)."""
        return self.values.get("pci.bus_id")

    @property
    def pcie_link_gen_current(self) -> int | None:
        """``pcie.link.gen.current``: the generation the link trained at."""
        return self.get_int("pcie.link.gen.current") if "pcie.link.gen.current" in self.values else None

    @property
    def pcie_link_gen_max(self) -> int | None:
        """``pcie.link.gen.max``: the highest generation both ends support."""
        return self.get_int("pcie.link.gen.max") if "pcie.link.gen.max" in self.values else None

    @property
    def pcie_link_width_current(self) -> int | None:
        """``pcie.link.width.current``: lanes in use."""
        return self.get_int("pcie.link.width.current") if "pcie.link.width.current" in self.values else None

    @property
    def pcie_link_width_max(self) -> int | None:
        """``pcie.link.width.max``: lanes the link could use."""
        return self.get_int("pcie.link.width.max") if "pcie.link.width.max" in self.values else None


@dataclass(frozen=True)
class QueryGpuResult:
    """The queried field names (units stripped) and one row per GPU."""

    fields: tuple[str, ...]
    rows: tuple[QueryGpuRow, ...]


def _strip_unit(value: str, unit: str | None) -> str | None:
    value = value.strip()
    if not value or _PLACEHOLDER.match(value):
        return None
    if unit and value.endswith(unit):
        return value[: -len(unit)].strip() or None
    return value


@register(TOOL, "nvidia-smi --query-gpu=... --format=csv: one row of named fields per GPU", corpus=("nvidia-smi-query-gpu",))
def parse_nvidia_smi_query_gpu(text: str, fields: Sequence[str] | None = None) -> QueryGpuResult:
    """Parse ``--query-gpu`` CSV.  ``fields``: the ``--query-gpu`` list, needed only with ``noheader``."""
    lines = [line for line in text.splitlines() if line.strip()]
    if not lines:
        raise UnrecognizedOutput(TOOL, "empty output")
    for line in lines[:3]:
        if any(marker in line for marker in _TOOL_ERRORS):
            raise ToolReportedError(TOOL, line.strip())
    try:
        records = list(csv.reader(lines, skipinitialspace=True))
    except csv.Error as exc:
        raise UnrecognizedOutput(TOOL, f"not CSV: {exc}") from None

    units: dict[str, str] = {}
    if fields is None:
        names: list[str] = []
        for position, cell in enumerate(records[0], start=1):
            match = _HEADER_FIELD.match(cell.strip())
            if not match:
                raise UnrecognizedOutput(
                    TOOL, f"header column {position} {cell.strip()[:60]!r} is not a field name (noheader output needs the field list)", line=1
                )
            names.append(match.group("name"))
            if match.group("unit"):
                units[match.group("name")] = match.group("unit")
        data = records[1:]
    else:
        names = [name.strip() for name in fields]
        data = records
    if len(set(names)) != len(names):
        raise UnrecognizedOutput(TOOL, "a field name appears twice in the header")

    rows = []
    first_data_line = 1 if fields is not None else 2
    for number, record in enumerate(data, start=first_data_line):
        if len(record) != len(names):
            raise UnrecognizedOutput(TOOL, f"row has {len(record)} values for {len(names)} fields (truncated?)", line=number)
        values = {name: _strip_unit(value, units.get(name)) for name, value in zip(names, record)}
        rows.append(QueryGpuRow(values, dict(units)))
    if not rows:
        raise UnrecognizedOutput(TOOL, "a header but no GPU rows (noheader output needs the field list)")
    return QueryGpuResult(tuple(names), tuple(rows))
