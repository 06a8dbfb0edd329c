"""Egress from a node: how long a name takes to resolve.

Timed on the node itself (``date +%s%N`` around ``getent ahosts``), so the
figure is the node's resolver and not the SSH round trip.
"""

from __future__ import annotations

import shlex
from urllib.parse import urlsplit

from ..cluster import NodeHandle
from ..units import parse_quantity
from ..verdict import Measurement
from .base import MeasurementError

__all__ = ["target_host", "dns_resolve"]


def target_host(target: str) -> str:
    """The host part of ``https://host/path`` or ``host:port``."""
    parts = urlsplit(target if "://" in target else f"tcp://{target}")
    return parts.hostname or target


def dns_resolve(node: NodeHandle, target: str) -> Measurement:
    """Time to resolve the target's host name on the node."""
    host = target_host(target)
    command = (
        f"s=$(date +%s%N); getent ahosts {shlex.quote(host)} >/dev/null; rc=$?; e=$(date +%s%N); "
        'echo "$rc $((e - s))"'
    )
    result = node.run(command, timeout=30)
    fields = result.stdout.split()
    if len(fields) != 2 or not all(f.lstrip("-").isdigit() for f in fields):
        raise MeasurementError(
            node.name,
            f"could not read the timing line from {result.stdout.strip()!r}",
            command=command,
            fix="the node needs getent (libc-bin) and GNU date",
        )
    rc, elapsed_ns = int(fields[0]), int(fields[1])
    if rc != 0:
        reason = {2: "the name does not exist (NXDOMAIN)", 1: "bad arguments", 3: "getent cannot enumerate"}.get(
            rc, f"getent exited {rc}"
        )
        return Measurement.absent(f"{host} did not resolve on {node.name}: {reason}", (result,))
    return Measurement(
        value=parse_quantity(f"{elapsed_ns} ns"),
        detail=f"getent ahosts {host} on {node.name}",
        evidence=(result,),
    )
