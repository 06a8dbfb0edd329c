"""Counters a tool does not keep, read before and after it runs: the second witness of its figure.

The kernel counts every byte an interface sends and receives (``/sys/class/net/IF/statistics``),
the HCA every 4 octets a port sends and receives (PortXmitData / PortRcvData, read with
``perfquery -x``), whatever program moved them. A wrapper that prints a larger figure than the
tool measured does not move these counters; :mod:`pytest_fabric.judge.corroboration` compares
the two. What this proves and what it cannot is in docs/report.md.
"""

from __future__ import annotations

from dataclasses import dataclass

from pytest_fabric.parsers import netdev_statistics, perfquery
from pytest_fabric.probes.base import parse_or_raise
from pytest_fabric.run.cluster import NodeHandle
from pytest_fabric.transport.base import TransportError
from pytest_fabric.transport.results import CommandResult
from pytest_fabric.transport.shellcmd import fill

__all__ = ["PortBytes", "hca_port_bytes", "interface_bytes"]

_INTERFACE = (
    "cd /sys/class/net/{interface}/statistics && "
    "for f in tx_bytes rx_bytes; do printf '%s %s\\n' \"$f\" \"$(cat \"$f\")\"; done"
)


@dataclass(frozen=True)
class PortBytes:
    """Bytes a port or interface has sent and received so far, as its counters say; ``None`` if unreadable."""

    where: str
    """``node01 eth0`` or ``node01 mlx5_0/1``."""
    sent: int | None
    received: int | None
    evidence: CommandResult | None
    problem: str | None = None


def interface_bytes(node: NodeHandle, interface: str) -> PortBytes:
    """The kernel's tx_bytes and rx_bytes of ``interface`` on ``node``; unreadable is a PortBytes with why, not an error."""
    where = f"{node.name} {interface}"
    try:
        result = node.run(fill(_INTERFACE, interface=interface), timeout=15, check=False)
    except TransportError as exc:  # the measurement reports an unreachable node; the witness did not run
        return PortBytes(where, None, None, None, str(exc).splitlines()[0])
    if result.exit_code != 0:
        return PortBytes(where, None, None, result, (result.stderr or result.stdout).strip()[-200:])
    try:
        found = parse_or_raise(netdev_statistics.parse, result)
    except Exception as exc:  # a counter that cannot be read is a witness that did not run
        return PortBytes(where, None, None, result, str(exc))
    return PortBytes(where, found.get("tx_bytes"), found.get("rx_bytes"), result)


_SYSFS_PORT = (
    "cd /sys/class/infiniband/{device}/ports/{port}/counters && "
    "for f in port_xmit_data port_rcv_data; do printf '%s %s\\n' \"$f\" \"$(cat \"$f\")\"; done"
)


def hca_port_bytes(node: NodeHandle, device: str, port: int) -> PortBytes:
    """The HCA port's PortXmitData and PortRcvData (perfquery -x, 64-bit) as bytes (they count 4 octets each).

    Where perfquery cannot read the port (RoCE has no subnet management; perfquery not installed),
    the same counters from sysfs (``/sys/class/infiniband/DEV/ports/N/counters``, 64-bit on mlx5).
    """
    where = f"{node.name} {device}/{port}"
    try:
        result = node.run(fill("perfquery -x -C {device} -P {port}", device=device, port=port), timeout=30,
                          check=False)
    except TransportError as exc:
        return PortBytes(where, None, None, None, str(exc).splitlines()[0])
    if result.exit_code != 0:
        return _sysfs_port_bytes(node, device, port, where, (result.stderr or result.stdout).strip()[-200:])
    try:
        ports = parse_or_raise(perfquery.parse_perfquery, result)
    except Exception as exc:
        return PortBytes(where, None, None, result, str(exc))
    counters = ports[0].counters if ports else {}
    sent, received = counters.get("PortXmitData"), counters.get("PortRcvData")
    return PortBytes(where, None if sent is None else sent * 4, None if received is None else received * 4, result)


def _sysfs_port_bytes(node: NodeHandle, device: str, port: int, where: str, why: str) -> PortBytes:
    try:
        result = node.run(fill(_SYSFS_PORT, device=device, port=port), timeout=15, check=False)
    except TransportError as exc:
        return PortBytes(where, None, None, None, f"perfquery: {why}; sysfs: {str(exc).splitlines()[0]}")
    try:
        found = parse_or_raise(netdev_statistics.parse, result) if result.exit_code == 0 else None
    except Exception:  # an unreadable counter is a witness that did not run
        found = None
    if not found or "port_xmit_data" not in found:
        said = (result.stderr or result.stdout).strip()[-200:]
        return PortBytes(where, None, None, result, f"perfquery: {why}; sysfs: {said or 'no counters'}")
    return PortBytes(where, found["port_xmit_data"] * 4, found.get("port_rcv_data", 0) * 4, result)
