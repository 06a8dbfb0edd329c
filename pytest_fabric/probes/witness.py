"""Counters a tool does not keep, read before and after it runs: the second witness of its figure.

The kernel counts every byte an interface sends and receives (``/sys/class/net/IF/statistics``),
the HCA every 4 octets a port sends and receives (PortXmitData / PortRcvData, read with
``perfquery -x``), the block layer every sector a device reads and writes (``/proc/diskstats``)
and the NFS client every byte its READ and WRITE calls move (``/proc/self/mountstats``), whatever
program moved them. A wrapper that prints a larger figure than the tool measured does not move
these counters; :mod:`pytest_fabric.judge.corroboration` compares the two. What this proves and
what it cannot is in docs/report.md.
"""

from __future__ import annotations

from dataclasses import dataclass

from pytest_fabric.parsers import netdev_statistics, perfquery, storage_counters
from pytest_fabric.parsers.storage_counters import StorageCounters
from pytest_fabric.probes.base import parse_or_raise
from pytest_fabric.run.cluster import NodeHandle
from pytest_fabric.transport.base import TransportError
from pytest_fabric.transport.results import CommandResult
from pytest_fabric.transport.shellcmd import fill

__all__ = ["PortBytes", "StorageBytes", "hca_port_bytes", "interface_bytes", "storage_bytes"]

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


# findmnt -T names the filesystem the directory is on (its device number, even for a bind mount);
# that device's /proc/diskstats line, and for NFS the mount's bytes line of /proc/self/mountstats
# (this process's mount namespace: the mounts the tool saw). Filtered on the node: a node with
# many NFS mounts has a mountstats of thousands of lines.
_STORAGE = (
    "d={directory}; m=$(findmnt -n -o MAJ:MIN,FSTYPE -T \"$d\") || exit 3; set -- $m; "
    "t=$(findmnt -n -o TARGET -T \"$d\"); printf 'mount %s %s %s\\n' \"$1\" \"$2\" \"$t\"; "
    "awk -v d=\"$1\" '($1 \":\" $2) == d {{print \"diskstats\", $0}}' /proc/diskstats; "
    "awk -v t=\"$t\" '$1 == \"device\" {{on = ($5 == t)}} on && $1 == \"bytes:\" {{print \"mountstats\", $0}}' "
    "/proc/self/mountstats 2>/dev/null; true"
)


@dataclass(frozen=True)
class StorageBytes:
    """What the kernel had counted for the filesystem under a directory at one moment; ``None`` if unreadable."""

    where: str
    """``node01 /mnt/scratch``: the node and the directory."""
    counters: StorageCounters | None
    evidence: CommandResult | None
    problem: str | None = None

    @property
    def source(self) -> str:
        """What counted: ``block device loop0 (ext4 on /mnt/scratch)``, ``NFS client (nfs4 on /home)``, ..."""
        c = self.counters
        if c is None:
            return "nothing read"
        if c.device is not None:
            return f"block device {c.device} ({c.fstype} on {c.target})"
        if c.nfs_server_read is not None:
            return f"NFS client ({c.fstype} on {c.target})"
        return f"{c.fstype} on {c.target}"


def storage_bytes(node: NodeHandle, directory: str) -> StorageBytes:
    """The sectors the block device under ``directory`` has read and written, or its NFS client's bytes.

    A filesystem with neither (tmpfs, overlay, btrfs's anonymous device, FUSE) is a reading with
    no counters: the judge says "no witness on this filesystem", never that it agreed.
    """
    where = f"{node.name} {directory}"
    try:
        result = node.run(fill(_STORAGE, directory=directory), timeout=15, check=False)
    except TransportError as exc:  # the measurement reports an unreachable node; the witness did not run
        return StorageBytes(where, None, None, str(exc).splitlines()[0])
    if result.exit_code != 0:
        said = (result.stderr or result.stdout).strip()[-200:]
        return StorageBytes(where, None, result, said or f"findmnt -T {directory} exited {result.exit_code}")
    try:
        found = parse_or_raise(storage_counters.parse, result)
    except Exception as exc:  # a counter that cannot be read is a witness that did not run
        return StorageBytes(where, None, result, str(exc))
    return StorageBytes(where, found, result)
