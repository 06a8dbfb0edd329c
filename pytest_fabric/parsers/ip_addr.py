"""``ip -o addr show``: which interface holds which address.

One line per address:
``2: eth0    inet 10.0.0.5/24 brd 10.0.0.255 scope global eth0\\       valid_lft forever ...``
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass

from .base import UnrecognizedOutput, register

__all__ = ["InterfaceAddress", "parse_ip_addr", "interface_with_address"]

_LINE = re.compile(r"^\s*(?P<index>\d+):\s+(?P<name>[^\s:@]+)(?:@\S+)?\s+(?P<family>inet6?)\s+(?P<cidr>\S+)")


@dataclass(frozen=True)
class InterfaceAddress:
    index: int
    interface: str
    family: str  # inet | inet6
    address: str
    prefix_length: int


@register("ip-addr", "ip -o addr show: interface, family and address per line", corpus=())
def parse_ip_addr(text: str) -> list[InterfaceAddress]:
    """Every address line of ``ip -o addr show``; lines of other shapes are ignored."""
    out = []
    for line in text.splitlines():
        match = _LINE.match(line)
        if not match:
            continue
        address, _, prefix = match.group("cidr").partition("/")
        try:
            ipaddress.ip_address(address.split("%")[0])
            length = int(prefix) if prefix else (32 if match.group("family") == "inet" else 128)
        except ValueError:
            continue
        out.append(InterfaceAddress(int(match.group("index")), match.group("name"), match.group("family"), address, length))
    if not out:
        raise UnrecognizedOutput("ip-addr", "no address lines (expected `N: IFNAME inet ADDR/LEN ...`)")
    return out


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
