"""``ip -o addr show`` and ``ip -br addr show``: which interface holds which address.

``-o``, one line per address:
``2: eth0    inet 10.0.0.5/24 brd 10.0.0.255 scope global eth0\\       valid_lft forever ...``

``-br`` (brief, iproute2 6.x), one line per interface, every address after the state,
none on an interface without one::

    lo               UNKNOWN        127.0.0.1/8 ::1/128
    eth0@if12        UP             10.0.0.5/24 fe80::fc:ff:fe00:1/64
    ifb0             DOWN

Lines of neither shape are skipped and listed in the result's ``skipped``.
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass

from pytest_fabric.parsers.base import SkippedLines, UnrecognizedOutput, register

__all__ = ["InterfaceAddress", "InterfaceAddresses", "parse_ip_addr", "interface_with_address"]

_LINE = re.compile(
    r"^\s*(?P<index>\d+):\s+(?P<name>[^\s:@]+)(?:@\S+)?\s+(?P<family>inet6?)\s+(?P<cidr>\S+)"
)


_BRIEF = re.compile(
    r"^(?P<name>[^\s@]+)(?:@\S+)?\s+(?P<state>UP|DOWN|UNKNOWN|LOWERLAYERDOWN|DORMANT|NOTPRESENT|TESTING)"
    r"(?P<addresses>(?:\s+\S+)*)\s*$"
)


@dataclass(frozen=True)
class InterfaceAddress:
    index: int | None  # None in the brief form, which prints no index
    interface: str
    family: str  # inet | inet6
    address: str
    prefix_length: int
    state: str | None = None  # operstate, shown by the brief form only


class InterfaceAddresses(list[InterfaceAddress]):
    """The addresses in order, the brief form's interfaces without one, and the lines read past."""

    def __init__(
        self,
        addresses: list[InterfaceAddress],
        skipped: SkippedLines,
        without_address: tuple[str, ...] = (),
    ) -> None:
        super().__init__(addresses)
        self.without_address = without_address
        self.skipped: tuple[str, ...] = skipped.lines
        self.skipped_count: int = skipped.count


def _address(cidr: str, family: str | None) -> tuple[str, str, int] | None:
    """(family, address, prefix length) of ``ADDR[/LEN]``, or None when it is not an address."""
    address, _, prefix = cidr.partition("/")
    try:
        parsed = ipaddress.ip_address(address.split("%")[0])
        family = family or ("inet6" if parsed.version == 6 else "inet")
        length = int(prefix) if prefix else (32 if family == "inet" else 128)
    except ValueError:
        return None
    return family, address, length


def _peers_joined(tokens: list[str]) -> list[str]:
    """``LOCAL peer PEER/LEN`` (a point-to-point address) as ``LOCAL/LEN``: the peer is not this host's."""
    out: list[str] = []
    index = 0
    while index < len(tokens):
        if index + 2 < len(tokens) and tokens[index + 1] == "peer":
            local = tokens[index].split("/")[0]
            _, _, length = tokens[index + 2].partition("/")
            out.append(f"{local}/{length}" if length else local)
            index += 3
        else:
            out.append(tokens[index])
            index += 1
    return out


@register("ip-addr", "ip -o|-br addr show: interface, family and address per address", corpus=())
def parse_ip_addr(text: str) -> InterfaceAddresses:
    """Every address of ``ip -o addr show`` or ``ip -br addr show``; other lines are skipped."""
    out: list[InterfaceAddress] = []
    without: list[str] = []
    skipped = SkippedLines()
    for line in text.splitlines():
        if match := _LINE.match(line):
            found = _address(match.group("cidr"), match.group("family"))
            if found is None:
                skipped.add(line)
                continue
            out.append(InterfaceAddress(int(match.group("index")), match.group("name"), *found))
        elif brief := _BRIEF.match(line.strip()):
            cidrs = _peers_joined(brief.group("addresses").split())
            read = [_address(cidr, None) for cidr in cidrs]
            if not cidrs:
                without.append(brief.group("name"))
            elif None in read:
                skipped.add(line)
                continue
            for family, address, length in (r for r in read if r is not None):
                out.append(
                    InterfaceAddress(
                        None, brief.group("name"), family, address, length, brief.group("state")
                    )
                )
        else:
            skipped.add(line)
    if not out:
        raise UnrecognizedOutput(
            "ip-addr",
            "no address lines (expected `N: IFNAME inet ADDR/LEN ...` or `IFNAME STATE ADDR/LEN ...`)",
        )
    return InterfaceAddresses(out, skipped, tuple(without))


def interface_with_address(addresses: list[InterfaceAddress], address: str) -> str | None:
    """The interface that holds ``address``, or None."""
    try:
        wanted = ipaddress.ip_address(address)
    except ValueError:
        return None
    for entry in addresses:
        try:
            if ipaddress.ip_address(entry.address.split("%")[0]) == wanted:
                return entry.interface
        except ValueError:
            continue
    return None
