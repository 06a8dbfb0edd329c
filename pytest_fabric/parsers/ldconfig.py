"""``ldconfig -p``: the shared libraries in the linker cache and where they are.

::

    1503 libs found in cache `/etc/ld.so.cache'
            libnccl.so.2 (libc6,x86-64) => /lib/x86_64-linux-gnu/libnccl.so.2
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from pytest_fabric.parsers._textscan import split_lines
from pytest_fabric.parsers.base import UnrecognizedOutput, register

__all__ = ["CachedLibrary", "parse_ldconfig"]

TOOL = "ldconfig"

_ROW = re.compile(r"^\s*(?P<soname>\S+)\s+\((?P<flags>[^)]*)\)(?:\s+OS ABI:[^=]*)?\s*=>\s*(?P<path>\S+)\s*$")


@dataclass(frozen=True)
class CachedLibrary:
    soname: str  # libnccl.so.2
    flags: str  # libc6,x86-64
    path: str


@register(TOOL, "ldconfig -p: shared libraries in the linker cache (soname, ABI flags, path)")
def parse_ldconfig(text: str) -> list[CachedLibrary]:
    """Every library line of ``ldconfig -p``."""
    lines = split_lines(TOOL, text)
    found = [CachedLibrary(m.group("soname"), m.group("flags"), m.group("path"))
             for m in (_ROW.match(line) for line in lines) if m]
    if not found and not any("libs found in cache" in line for line in lines):
        raise UnrecognizedOutput(TOOL, "no 'N libs found in cache' header and no 'soname (flags) => path' line")
    return found
