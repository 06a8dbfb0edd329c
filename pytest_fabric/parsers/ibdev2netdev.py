"""``ibdev2netdev`` and ``ibdev2netdev -v``: which netdev each RDMA port drives.

Plain::

    mlx5_0 port 1 ==> ens4f0 (Down)

Verbose (PCI address, part number and PSID, board, firmware, port state)::

    0000:4b:00.0 mlx5_2 (MT4119 - MCX515A-CCAT) CX515A - ConnectX-5 QSFP28 fw 16.27.1016 port 1 (ACTIVE) ==> ens6 (Up)
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from pytest_fabric.parsers._textscan import split_lines
from pytest_fabric.parsers.base import ParseError, UnrecognizedOutput, register

__all__ = ["Ibdev2netdevEntry", "parse_ibdev2netdev"]

TOOL = "ibdev2netdev"

_ARROW = r"(?:==>|<===>|<==>)"
_PLAIN_RE = re.compile(
    rf"^(?P<device>\S+)\s+port\s+(?P<port>[0-9]+)\s+{_ARROW}\s+(?P<netdev>\S+)\s*\((?P<link>[^)]*)\)\s*$"
)
_VERBOSE_RE = re.compile(
    r"^(?P<bdf>(?:[0-9a-fA-F]{4}:)?[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7])\s+(?P<device>\S+)\s+"
    r"\((?P<ca_type>[^)\s]*)\s*(?:-\s*(?P<psid>[^)]*?))?\s*\)\s*(?P<board>.*?)\s*"
    r"fw\s+(?P<fw>\S+)\s+port\s+(?P<port>[0-9]+)\s+\((?P<state>[^)]*)\)\s*"
    rf"{_ARROW}\s*(?P<netdev>\S+)\s*\((?P<link>[^)]*)\)\s*$"
)


@dataclass(frozen=True)
class Ibdev2netdevEntry:
    """One RDMA port and its network device."""

    device: str
    port: int
    netdev: str
    netdev_state: str  # "Up" | "Down" as ibdev2netdev prints the netdev's operstate
    port_state: str | None = None  # -v only: ACTIVE, DOWN, INIT, ... (padding removed)
    pci_bdf: str | None = None  # -v only
    ca_type: str | None = None  # -v only: MT4119
    psid: str | None = None  # -v only: board part number or PSID ("NA" for VFs)
    board: str | None = None  # -v only: board description ("" for VFs)
    firmware: str | None = None  # -v only

    @property
    def is_up(self) -> bool:
        return self.netdev_state.lower() == "up"


@register(TOOL, "ibdev2netdev [-v]: RDMA port -> netdev, link state (and PCI address, board, fw with -v)",
          corpus=("ibdev2netdev",))
def parse_ibdev2netdev(text: str) -> list[Ibdev2netdevEntry]:
    """Parse plain or ``-v`` ibdev2netdev output (one entry per line)."""
    entries: list[Ibdev2netdevEntry] = []
    for number, line in enumerate(split_lines(TOOL, text), start=1):
        if not line.strip():
            continue
        verbose = _VERBOSE_RE.match(line)
        if verbose:
            entries.append(
                Ibdev2netdevEntry(
                    device=verbose.group("device"),
                    port=int(verbose.group("port")),
                    netdev=verbose.group("netdev"),
                    netdev_state=verbose.group("link").strip(),
                    port_state=verbose.group("state").strip(),
                    pci_bdf=verbose.group("bdf"),
                    ca_type=verbose.group("ca_type"),
                    psid=(verbose.group("psid") or "").strip() or None,
                    board=verbose.group("board"),
                    firmware=verbose.group("fw"),
                )
            )
            continue
        plain = _PLAIN_RE.match(line)
        if plain:
            entries.append(
                Ibdev2netdevEntry(
                    device=plain.group("device"),
                    port=int(plain.group("port")),
                    netdev=plain.group("netdev"),
                    netdev_state=plain.group("link").strip(),
                )
            )
            continue
        if not entries:
            raise UnrecognizedOutput(TOOL, f"not an ibdev2netdev line: {line.strip()[:80]!r}", line=number)
        raise ParseError(TOOL, f"not a '<dev> port <n> ==> <netdev> (<state>)' line: {line.strip()[:80]!r}", line=number)
    if not entries:
        raise UnrecognizedOutput(TOOL, "no '<dev> port <n> ==> <netdev>' line")
    return entries
