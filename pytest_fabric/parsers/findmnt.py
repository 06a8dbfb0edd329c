"""``findmnt -J -o TARGET,SOURCE,FSTYPE,OPTIONS`` (util-linux): which filesystems are mounted where.

With ``--mountpoint PATH`` the list holds the mounts whose target is PATH (several
when mounts are stacked on one directory: the last one covers the others); with
``--target PATH`` it holds the filesystem PATH lives on; without either, the whole
mount tree, children nested under ``"children"``::

    {"filesystems": [{"target": "/mnt/lustre", "source": "10.0.0.1@o2ib:/fs",
                      "fstype": "lustre", "options": "rw,flock,lazystatfs"}]}

findmnt prints nothing and exits 1 when nothing matches: that is not output this
parser reads (the probe tells "not a mount point" from the exit code).
"""

from __future__ import annotations

from dataclasses import dataclass

from pytest_fabric.parsers._textscan import json_document
from pytest_fabric.parsers.base import ParseError, UnrecognizedOutput, register

__all__ = ["FindmntFilesystem", "parse_findmnt"]

TOOL = "findmnt"


@dataclass(frozen=True)
class FindmntFilesystem:
    """One mount: where, what from, which type, with which options (VFS and filesystem options together)."""

    target: str
    source: str
    fstype: str
    options: tuple[str, ...]

    def option(self, name: str) -> str | None:
        """The option called ``name`` as mounted (``proto=tcp`` for ``proto``, ``ro`` for ``ro``), or None."""
        for option in self.options:
            if option == name or option.split("=", 1)[0] == name:
                return option
        return None

    def describe(self) -> str:
        """``nfs4 from server:/export (rw,vers=4.2,proto=tcp)``: what a message says is mounted."""
        return f"{self.fstype} from {self.source} ({','.join(self.options)})"


def _text(entry: dict[str, object], key: str, index: int) -> str:
    value = entry.get(key)
    if value is None:
        return ""
    if not isinstance(value, str):
        raise ParseError(TOOL, f"filesystems[{index}].{key} is {type(value).__name__}, not text")
    return value


def _flatten(entries: object, out: list[FindmntFilesystem], depth: int = 0) -> None:
    if not isinstance(entries, list):
        raise ParseError(TOOL, "'filesystems' (or 'children') is not a list")
    if depth > 64:
        raise ParseError(TOOL, "mount tree nested more than 64 deep")
    for entry in entries:
        if not isinstance(entry, dict):
            raise ParseError(TOOL, f"filesystems[{len(out)}] is not an object")
        target = _text(entry, "target", len(out))
        fstype = _text(entry, "fstype", len(out))
        if not target or not fstype:
            raise ParseError(TOOL, f"filesystems[{len(out)}] lacks target or fstype (run with -o TARGET,SOURCE,FSTYPE,OPTIONS)")
        options = _text(entry, "options", len(out))
        out.append(
            FindmntFilesystem(
                target=target,
                source=_text(entry, "source", len(out)),
                fstype=fstype,
                options=tuple(o for o in options.split(",") if o),
            )
        )
        if "children" in entry:
            _flatten(entry["children"], out, depth + 1)


@register("findmnt", "findmnt -J (util-linux): mounts with target, source, fstype and options")
def parse_findmnt(text: str) -> list[FindmntFilesystem]:
    """Every filesystem in findmnt's JSON, in the order findmnt lists them (a tree flattened depth-first)."""
    document = json_document(TOOL, text)
    if not isinstance(document, dict) or "filesystems" not in document:
        raise UnrecognizedOutput(TOOL, "no 'filesystems' list (is this findmnt -J output?)")
    found: list[FindmntFilesystem] = []
    _flatten(document["filesystems"], found)
    if not found:
        raise UnrecognizedOutput(TOOL, "no filesystems listed")
    return found
