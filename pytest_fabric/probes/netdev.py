"""Network devices on a node: which interface carries its data address, its MTU and link speed."""

from __future__ import annotations

import ipaddress
import socket
from dataclasses import dataclass

from pytest_fabric.config.units import Quantity, infiniband_data_rate, parse_quantity
from pytest_fabric.judge.verdict import Measurement
from pytest_fabric.parsers import ip_addr, ip_link
from pytest_fabric.probes.base import MeasurementError, parse_or_raise
from pytest_fabric.run.cluster import NodeHandle
from pytest_fabric.run.once import Once
from pytest_fabric.transport.results import CommandResult
from pytest_fabric.transport.shellcmd import fill, quote

__all__ = ["LinkRate", "data_interface", "link_rate", "mtu"]

ARPHRD_INFINIBAND = "32"  # /sys/class/net/IF/type of an IPoIB interface (1 is Ethernet)


def _ip_literal(address: str) -> str | OSError:
    """The address as an IP literal, resolved on this controller; the resolver's error when it cannot be."""
    try:
        return str(ipaddress.ip_address(address))
    except ValueError:
        pass
    try:
        return socket.getaddrinfo(address, None)[0][4][0]  # type: ignore[return-value]
    except OSError as exc:
        return exc


def data_interface(node: NodeHandle, once: Once | None = None) -> tuple[str, CommandResult]:
    """The interface holding the node's data address (``lo`` for a local node).

    With the run's ``once`` it is looked up once per node and run: every TCP pair, every round and
    the MTU check ask it of the same node, and on a large cluster those repeats were most of the
    SSH commands a pair cost. A failed lookup is kept too: each later asker gets the same error,
    naming the node and the command.
    """
    if once is not None:
        return once.get("data interface", node.name, lambda: data_interface(node))
    result = node.run("ip -o addr show", timeout=15)
    addresses = parse_or_raise(ip_addr.parse_ip_addr, result)
    wanted = _ip_literal(node.address)
    if isinstance(wanted, OSError):
        # Slurm's node names (and SSH aliases) need not resolve where pytest runs: the data address
        # that pairs are measured at is then unknown, which the inventory, not the node, must fix.
        raise MeasurementError(
            node.name,
            f"the node name {node.address} does not resolve on this controller ({socket.gethostname()}): "
            f"{wanted.strerror or wanted}; the address {node.name} is sent data at is unknown",
            command=f"getent hosts {node.address}",
            fix=f"give {node.name} a `data_address:` it holds in your inventory (a bundled one, --cluster slurm: "
                "python -m pytest_fabric.inventories slurm my-slurm.yaml writes a copy to fill in), "
                "or make the name resolve on this host (DNS, /etc/hosts)",
        )
    interface = ip_addr.interface_with_address(addresses, wanted)
    if interface is None:
        raise MeasurementError(
            node.name,
            f"no interface holds the data address {node.address} ({wanted})",
            command=result.command,
            fix=f"set `data_address:` for {node.name} in the inventory to an address the node holds",
        )
    return interface, result


def mtu(node: NodeHandle, once: Once | None = None) -> Measurement:
    """The MTU of the interface carrying the node's data traffic (its lookup shared through ``once``)."""
    interface, addr_result = data_interface(node, once)
    # -o, not -br: the brief form prints no MTU (iproute2 print_linkinfo_brief).
    result = node.run(fill("ip -o link show dev {interface}", interface=interface), timeout=15)
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


@dataclass(frozen=True)
class LinkRate:
    """What an interface's speed means as a line rate.

    ``reported`` is ``/sys/class/net/IF/speed`` (what ethtool shows).  An IPoIB
    interface reports its InfiniBand port's rate (200000 Mb/s on 4X HDR), and
    ``ib_speed`` names that port's speed from its sysfs ``rate``
    (``200 Gb/sec (4X HDR)``); ``line`` is the data rate a share of line is
    taken of: the reported speed on Ethernet, the IB data rate on IPoIB
    (32 Gb/s for 4X QDR's 40), None when it cannot be told.
    """

    interface: str
    reported: Quantity | None
    ipoib: bool
    ib_speed: str | None
    line: Quantity | None

    def describe(self) -> str:
        """``ib0 (IPoIB, 40 Gb/sec (4X QDR): data rate 32 Gb/s)`` or ``eth0 100 Gb/s``."""
        if self.reported is None:
            return f"{self.interface} (no speed reported)"
        if not self.ipoib:
            return f"{self.interface} {self.reported.display('Gb/s')}"
        data = f"data rate {self.line.display('Gb/s')}" if self.line is not None else "data rate unknown"
        return f"{self.interface} (IPoIB, {self.ib_speed or 'IB speed not named'}: {data})"


def link_rate(node: NodeHandle, interface: str, once: Once | None = None) -> tuple[LinkRate, CommandResult]:
    """The interface's reported speed and, for IPoIB, the data rate of the InfiniBand port under it.

    IPoIB sets ``dev_port`` to the IB port number minus one; the port's sysfs
    ``rate`` names the speed (QDR, FDR, HDR...), which decides the line code.
    With the run's ``once`` it is read once per node and interface.
    """
    if once is not None:
        return once.get("link rate", (node.name, interface), lambda: link_rate(node, interface))
    d = quote(f"/sys/class/net/{interface}")
    result = node.run(
        f"d={d}; echo \"type $(cat $d/type 2>/dev/null)\"; echo \"speed $(cat $d/speed 2>/dev/null)\"; "
        'p=$(( $(cat $d/dev_port 2>/dev/null || echo 0) + 1 )); '
        'for r in $d/device/infiniband/*/ports/$p/rate; do [ -r "$r" ] && echo "ibrate $(cat "$r")"; done; true',
        timeout=15,
        check=False,
    )
    facts: dict[str, str] = {}
    for text in result.stdout.splitlines():
        key, _, value = text.partition(" ")
        facts.setdefault(key, value.strip())
    speed = facts.get("speed", "")
    reported = parse_quantity(f"{int(speed)} Mb/s") if speed.isdigit() and int(speed) > 0 else None
    ipoib = facts.get("type") == ARPHRD_INFINIBAND
    ib_speed = facts.get("ibrate") or None
    line = reported
    if ipoib:
        line = infiniband_data_rate(reported, ib_speed) if reported is not None else None
    return LinkRate(interface, reported, ipoib, ib_speed, line), result
