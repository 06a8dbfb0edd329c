"""``lsmod``: loaded kernel modules, their size, use count and users.

::

    Module                  Size  Used by
    nvidia_peermem         16384  0
    nvidia              56807424  2163 nvidia_uvm,nvidia_peermem,nvidia_modeset
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from pytest_fabric.parsers._textscan import split_lines
from pytest_fabric.parsers.base import UnrecognizedOutput, register

__all__ = ["KernelModule", "parse_lsmod"]

TOOL = "lsmod"

_ROW = re.compile(r"^(?P<name>[A-Za-z0-9_]+)\s+(?P<size>[0-9]+)\s+(?P<count>-?[0-9]+)(?:\s+(?P<users>\S+))?\s*$")


@dataclass(frozen=True)
class KernelModule:
    name: str
    size: int
    use_count: int
    used_by: tuple[str, ...]


@register(TOOL, "lsmod: loaded kernel modules with size, use count and users")
def parse_lsmod(text: str) -> dict[str, KernelModule]:
    """Module name -> :class:`KernelModule`, in lsmod's order."""
    lines = split_lines(TOOL, text)
    if not any(line.split()[:3] == ["Module", "Size", "Used"] for line in lines if line.strip()):
        raise UnrecognizedOutput(TOOL, "no 'Module  Size  Used by' header; is this lsmod output?")
    modules: dict[str, KernelModule] = {}
    for line in lines:
        match = _ROW.match(line.strip())
        if match:
            users = tuple(u for u in (match.group("users") or "").strip("[]").split(",") if u and u != "-")
            modules[match.group("name")] = KernelModule(
                match.group("name"), int(match.group("size")), int(match.group("count")), users
            )
    return modules
