"""The inventory's ``tools:``: binaries the tenant brings, pinned by path and SHA-256.

The provider has root on every node and installs the tools there: a wrapper in front of
``iperf3`` can print any figure it likes. A tenant who does not trust that writes::

    tools:
      iperf3: {path: ./bin/iperf3, sha256: 3f5a...}

and the run uploads that file to a fresh directory of its own on each node, checks its SHA-256
there, and runs it by absolute path with a clean environment (``run/tenant_tools.py``,
``probes/tool_upload.py``). Here, at load, the file on this machine must be the one pinned: a
mismatch is refused before any node is touched. A relative path is read beside the inventory.

Only the tools whose probes run them through ``NodeHandle.tool`` may be pinned
(:data:`TENANT_TOOLS`): a pin the probes would not honour would be a promise the run breaks.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, field_validator

from pytest_fabric.config import yamlsource

__all__ = ["TENANT_TOOLS", "PinnedTool", "ToolPinEntry", "check_tool_name", "resolve_pins"]

#: the tools every probe that runs them takes from ``NodeHandle.tool`` (in the order said in errors)
TENANT_TOOLS = ("iperf3", "fio", "ib_write_bw", "ib_write_lat")

_SHA256_RE = re.compile(r"^[0-9a-fA-F]{64}$")
# read in chunks: a tool may be tens of megabytes (a static fio)
_CHUNK = 1 << 20


@dataclass(frozen=True)
class PinnedTool:
    """A tool the tenant supplies: the file on this machine and the SHA-256 it must have everywhere."""

    name: str
    source: Path  # absolute, resolved
    sha256: str  # lower-case hex
    size: int


class ToolPinEntry(BaseModel):
    """One entry of ``tools:``: ``{path: ./bin/iperf3, sha256: HEX}``."""

    model_config = ConfigDict(extra="forbid")

    path: str
    sha256: str

    @field_validator("sha256")
    @classmethod
    def _sha256(cls, value: str) -> str:
        if not _SHA256_RE.match(value):
            raise ValueError(f"{value!r} is not a SHA-256: write the 64 hexadecimal digits sha256sum prints")
        return value.lower()

    @field_validator("path")
    @classmethod
    def _path(cls, value: str) -> str:
        if not value or "\0" in value:
            raise ValueError("write the path of the binary on this machine (relative paths are read beside the inventory)")
        return value


def check_tool_name(name: str) -> str:
    """``name`` if the probes run it through ``NodeHandle.tool``; else what may be pinned."""
    if name not in TENANT_TOOLS:
        raise ValueError(
            f"{name!r} cannot be pinned: the tools the probes run by the pinned path are {', '.join(TENANT_TOOLS)}"
        )
    return name


def _digest(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while chunk := handle.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def resolve_pins(
    source: Path, lines: dict[Any, int], entries: dict[str, ToolPinEntry]
) -> tuple[tuple[PinnedTool, ...], list[str]]:
    """Each entry's file, read and hashed now; the pins and every problem (``inv.yaml:12: tools.fio.sha256: ...``)."""
    pins: list[PinnedTool] = []
    problems: list[str] = []
    for name, entry in entries.items():
        def where(key: str, name: str = name) -> str:
            line = yamlsource.line_of(lines, ("tools", name, key))
            return f"{source}:{line}: tools.{name}.{key}" if line else f"{source}: tools.{name}.{key}"

        written = Path(entry.path).expanduser()
        path = (written if written.is_absolute() else source.parent / written).resolve()
        shown = entry.path if str(path) == entry.path else f"{entry.path} ({path})"
        if not path.is_file():
            what = "no such file" if not path.exists() else "not a regular file"
            problems.append(f"{where('path')}: {shown}: {what}; give the binary to upload to every node")
            continue
        try:
            actual = _digest(path)
            size = path.stat().st_size
        except OSError as exc:
            problems.append(f"{where('path')}: {shown}: cannot be read ({exc.strerror})")
            continue
        if actual != entry.sha256:
            problems.append(
                f"{where('sha256')}: {shown} has sha256 {actual}, not the pinned {entry.sha256}: it is not the "
                f"file you pinned; restore that file, or pin this one (sha256sum {path}) once you trust it"
            )
            continue
        pins.append(PinnedTool(name, path, actual, size))
    return tuple(pins), problems
