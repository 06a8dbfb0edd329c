"""The tool identity listing (``probes/tool_identity.py``'s script): text -> :class:`NodeToolIdentity`.

The script prints one record per line, fields separated by a tab, in this order per tool::

    tool        NAME  PATH-ON-PATH  RESOLVED-PATH     (or: tool  NAME  -  -  missing)
    sha256      HEX
    magic       HEX of the first four bytes (7f454c46 for an ELF)
    shebang     the first line when it starts with #!
    build_id    HEX (readelf -n, else file -L); empty when neither says
    package     dpkg|rpm  NAME                         (or: package  -  -  when no package owns it)
    verify      one line of dpkg --verify / rpm -V that names the resolved path
    verify_rc   the exit status of the verification

then, once for the node, ``ld_preload VALUE`` (the session's ``LD_PRELOAD``, the environment the
tools run in) and one ``ld_so_preload LINE`` per line of ``/etc/ld.so.preload``.  A node's
values arrive as text: the parser keeps them as text and never runs or opens anything.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from pytest_fabric.parsers.base import ParseError, UnrecognizedOutput, register

__all__ = ["ELF_MAGIC", "NodeToolIdentity", "ToolIdentity", "parse"]

TOOL = "tool-identity"
ELF_MAGIC = "7f454c46"
_HEX = re.compile(r"^[0-9a-f]*$")


@dataclass(frozen=True)
class ToolIdentity:
    """What one tool name is on one node: the file that runs, its hash, its build id and its package."""

    name: str
    path: str | None
    """What ``command -v`` found on the session's PATH; ``None`` when the tool is missing."""
    resolved: str | None
    """``readlink -f`` of :attr:`path`: the file that runs."""
    sha256: str | None
    magic: str | None
    shebang: str | None
    build_id: str | None
    package_manager: str | None
    """``dpkg`` or ``rpm``; ``None`` where neither is on the node."""
    package: str | None
    """The package that owns :attr:`resolved` (or :attr:`path`); ``None`` when none does."""
    verify: tuple[str, ...] = ()
    """The package manager's verification lines that name the file (a changed digest, size, mode)."""
    verify_rc: int | None = None
    supplied_by: str = "provider"
    """``tenant`` for a copy of the tenant's pinned binary the run uploaded (inventory ``tools:``)."""
    pinned_sha256: str | None = None
    """The SHA-256 the tenant pinned, for a tenant's tool: :attr:`sha256` (read on the node) must equal it."""

    @property
    def missing(self) -> bool:
        return self.path is None

    @property
    def is_elf(self) -> bool:
        return self.magic == ELF_MAGIC

    @property
    def is_script(self) -> bool:
        return self.shebang is not None

    def to_dict(self) -> dict[str, object]:
        """Plain JSON for the record."""
        return {
            "path": self.path, "resolved": self.resolved, "sha256": self.sha256,
            "elf": self.is_elf, "script": self.shebang, "build_id": self.build_id,
            "package_manager": self.package_manager, "package": self.package,
            "verify": list(self.verify), "verify_rc": self.verify_rc, "supplied_by": self.supplied_by,
            **({"pinned_sha256": self.pinned_sha256, "verified_on_node": self.sha256 == self.pinned_sha256}
               if self.supplied_by == "tenant" else {}),
        }


@dataclass(frozen=True)
class NodeToolIdentity:
    """Every listed tool on one node, and what the node preloads into every process."""

    tools: dict[str, ToolIdentity]
    ld_preload: str | None
    """``LD_PRELOAD`` in the session the tools run in; ``None`` when unset or empty."""
    ld_so_preload: tuple[str, ...] = field(default=())
    """The non-comment lines of ``/etc/ld.so.preload``."""

    def to_dict(self) -> dict[str, object]:
        return {
            "tools": {name: t.to_dict() for name, t in sorted(self.tools.items())},
            "ld_preload": self.ld_preload, "ld_so_preload": list(self.ld_so_preload),
        }


@dataclass
class _Building:
    name: str
    path: str | None
    resolved: str | None
    values: dict[str, str] = field(default_factory=dict)
    verify: list[str] = field(default_factory=list)
    manager: str | None = None
    package: str | None = None

    def freeze(self) -> ToolIdentity:
        def hex_or_none(key: str) -> str | None:
            value = self.values.get(key, "").strip().lower()
            return value if value and _HEX.match(value) else None

        rc = self.values.get("verify_rc", "").strip()
        shebang = self.values.get("shebang") or None
        return ToolIdentity(
            name=self.name, path=self.path, resolved=self.resolved,
            sha256=hex_or_none("sha256"), magic=hex_or_none("magic"),
            shebang=shebang if shebang and shebang.startswith("#!") else None,
            build_id=hex_or_none("build_id"), package_manager=self.manager, package=self.package,
            verify=tuple(self.verify), verify_rc=int(rc) if rc.lstrip("-").isdigit() else None,
        )


@register(TOOL, "the tool identity listing: path, SHA-256, ELF build id, package and its verification, preloads")
def parse(text: str) -> NodeToolIdentity:
    """Read the listing; a line of no known record, or a record before any ``tool`` line, is a :class:`ParseError`."""
    if not isinstance(text, str):
        raise UnrecognizedOutput(TOOL, f"expected text, got {type(text).__name__}")
    tools: dict[str, ToolIdentity] = {}
    current: _Building | None = None
    preload: str | None = None
    so_preload: list[str] = []
    seen_preload = False
    for number, raw in enumerate(text.splitlines(), start=1):
        if not raw.strip():
            continue
        kind, _, rest = raw.partition("\t")
        fields = rest.split("\t")
        if kind == "tool":
            if current is not None:
                tools[current.name] = current.freeze()
            if len(fields) < 3 or not fields[0]:
                raise ParseError(TOOL, f"a tool line needs NAME, PATH and RESOLVED: {raw!r}", line=number)
            name, path, resolved = fields[0], fields[1], fields[2]
            if path in ("", "-") or (len(fields) > 3 and fields[3] == "missing"):
                current = _Building(name, None, None)
            else:
                current = _Building(name, path, resolved or path)
            continue
        if kind == "ld_preload":
            seen_preload = True
            preload = rest.strip() or None
            continue
        if kind == "ld_so_preload":
            line = rest.strip()
            if line and not line.startswith("#"):
                so_preload.append(line)
            continue
        if current is None:
            raise ParseError(TOOL, f"a {kind!r} line before any tool line", line=number)
        if kind in ("sha256", "magic", "shebang", "build_id", "verify_rc"):
            current.values[kind] = rest.strip()
        elif kind == "package":
            manager, package = (fields + ["", ""])[:2]
            current.manager = manager if manager not in ("", "-") else None
            current.package = package.strip() if package.strip() not in ("", "-") else None
        elif kind == "verify":
            if rest.strip():
                current.verify.append(rest.strip())
        else:
            raise ParseError(TOOL, f"unknown record {kind!r}", line=number)
    if current is not None:
        tools[current.name] = current.freeze()
    if not tools and not seen_preload:
        raise UnrecognizedOutput(TOOL, "no tool and no ld_preload line: the listing did not run")
    return NodeToolIdentity(tools=tools, ld_preload=preload, ld_so_preload=tuple(so_preload))
