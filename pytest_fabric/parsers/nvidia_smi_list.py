"""``nvidia-smi -L``: one line per GPU the driver sees, ``GPU 0: NAME (UUID: GPU-...)``.

MIG instances follow their GPU as indented ``MIG ...`` lines and are not GPUs.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from pytest_fabric.parsers._textscan import split_lines
from pytest_fabric.parsers.base import ToolReportedError, UnrecognizedOutput, register

__all__ = ["ListedGpu", "parse_nvidia_smi_list"]

TOOL = "nvidia-smi-L"

_GPU = re.compile(r"^GPU (?P<index>[0-9]+): (?P<name>.+?)(?: \(UUID: (?P<uuid>[^)]+)\))?\s*$")


@dataclass(frozen=True)
class ListedGpu:
    index: int
    name: str
    uuid: str | None


@register(TOOL, "nvidia-smi -L: GPU index, name and UUID per line")
def parse_nvidia_smi_list(text: str) -> list[ListedGpu]:
    """The GPUs ``nvidia-smi -L`` lists (MIG lines left out)."""
    gpus = []
    for line in split_lines(TOOL, text):
        match = _GPU.match(line)
        if match:
            gpus.append(ListedGpu(int(match.group("index")), match.group("name"), match.group("uuid")))
        elif line.startswith(("NVIDIA-SMI has failed", "No devices were found")):
            raise ToolReportedError(TOOL, line.strip())
    if not gpus:
        raise UnrecognizedOutput(TOOL, "no 'GPU N: NAME (UUID: ...)' line")
    return gpus
