"""Network devices on a node: which interface carries its data address, its MTU and link speed."""

from __future__ import annotations

import ipaddress
import shlex
import socket

from ..cluster import NodeHandle
from ..parsers import ip_addr, ip_link
from ..transport.base import CommandResult
from ..units import Quantity, parse_quantity
from ..verdict import Measurement
from .base import MeasurementError, parse_or_raise

__all__ = ["data_interface", "mtu", "link_speed"]


def _ip_literal(address: str) -> str:
    try:
        return str(ipaddress.ip_address(address))
    except ValueError:
        pass
    try:
        return socket.getaddrinfo(address, None)[0][4][0]  # type: ignore[return-value]
    except OSError:
        return address


def data_interface(node: NodeHandle) -> tuple[str, CommandResult]:
    """The interface holding the node's data address (``lo`` for a local node)."""
    result = node.run("ip -o addr show", timeout=15)
    addresses = parse_or_raise(ip_addr.parse_ip_addr, result)
    wanted = _ip_literal(node.address)
    interface = ip_addr.interface_with_address(addresses, wanted)
    if interface is None:
        raise MeasurementError(
            node.name,
            f"no interface holds the data address {node.address} ({wanted})",
            command=result.command,
            fix=f"set `data_address:` for {node.name} in the inventory to an address the node holds",
        )
    return interface, result


def mtu(node: NodeHandle) -> Measurement:
    """The MTU of the interface carrying the node's data traffic."""
    interface, addr_result = data_interface(node)
    result = node.run(f"ip -o link show dev {shlex.quote(interface)}", timeout=15)
    links = parse_or_raise(ip_link.parse_ip_link, result)
    if not links or links[0].mtu_bytes is None:
        raise MeasurementError(node.name, f"no MTU in the output for {interface}", command=result.command)
    link = links[0]
    return Measurement(
        value=parse_quantity(link.mtu_bytes),
        detail=f"interface {interface} (state {link.state or 'unknown'})",
        evidence=(addr_result, result),
        extra={"interface": interface},
    )


def link_speed(node: NodeHandle, interface: str) -> tuple[Quantity | None, CommandResult]:
    """The speed the interface reports (sysfs, as ethtool shows it), or None if it reports none."""
    result = node.run(f"cat /sys/class/net/{shlex.quote(interface)}/speed", timeout=15, check=False)
    text = result.stdout.strip()
    if result.exit_code != 0 or not text.lstrip("-").isdigit() or int(text) <= 0:
        return None, result
    return parse_quantity(f"{int(text)} Mb/s"), result
