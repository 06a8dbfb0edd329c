"""RDMA port names as users write them (``mlx5_0`` or ``mlx5_0/1``), checked and made ``DEVICE/PORT``.

One rule for the inventory's ``rdma_ports`` and the profile's ``ports.names``: a name reaches
the nodes' command lines, so it may not start with ``-`` or ``.`` (an option, a path).
"""

from __future__ import annotations

import re

__all__ = ["rdma_port_names"]

_RDMA_PORT_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}(?:/[0-9]{1,3})?$")


def rdma_port_names(value: list[str], *, twice: str) -> list[str]:
    """``value`` as ``DEVICE/PORT`` names (port 1 where none is written); ``twice``: the error for a repeat."""
    out = []
    for port in value:
        if not _RDMA_PORT_RE.match(port):
            raise ValueError(f"{port!r} is not an RDMA port; write DEVICE or DEVICE/PORT, e.g. mlx5_0/1")
        out.append(port if "/" in port else f"{port}/1")
    if len(set(out)) != len(out):
        raise ValueError(twice)
    return out
