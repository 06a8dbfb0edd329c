"""Do two checks' figures of the same hardware agree?  Pure: figures in, findings out, with blame.

A tool's figure can be corroborated by counters (judge/corroboration.py); it can also be held
against another tool's figure of the same path, where physics orders them:

- **NCCL against the node's rails** (:func:`nccl_against_rails`): with NCCL_ALGO=Ring, a
  multi-node all_reduce's bus bandwidth crosses the network through the node's HCAs, so it
  cannot exceed what ib_write_bw measured those rails carry together. Above their sum x
  (1 + tolerance) one of the two figures is impossible: charged to the node whose tool printed
  the NCCL figure (the launcher prints it; the rails' figure is the lower one, and a provider
  gains nothing by understating it). Far below the sum (under ``below`` of it) is no
  impossibility but a finding: the rails are not the limit, look at the GPU side (PCIe/NVLink,
  GPUDirect, NCCL's own settings).
- **GPUDirect against host RDMA on the same port** (:func:`gpudirect_against_host`): the same
  perftest between the same two ports, from GPU memory instead of host memory, cannot carry
  more than the port did from host memory; above it x (1 + tolerance) is impossible, charged to
  the node whose GPUDirect run claimed it.
- **TCP against RDMA on the same port** (:func:`tcp_against_rdma`): TCP over an IPoIB or RoCE
  netdev rides the port an RDMA test measured; it cannot exceed the port's RDMA figure (which
  runs at the port's rate less its headers) x (1 + tolerance), charged to the TCP client.

Each finding is a :class:`CrossCheck` naming the node charged, both figures and the tolerance.
What a cross-check proves and what it cannot is in docs/report.md.

Which check's figure bounds which, by which relation and with what tolerance, is no table here: the
bounded check declares it (:class:`Bound`, its declaration's ``Check.bounded_by``, in its family
module), and measurements/cross_checked.py passes it in.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any, Literal

__all__ = [
    "CONSISTENT", "FINDING", "INCONSISTENT", "NOT_RUN", "Bound", "CrossCheck", "Relation", "failure",
    "gpudirect_against_host", "nccl_against_rails", "summary", "tcp_against_rdma",
]

CONSISTENT = "consistent"
INCONSISTENT = "inconsistent"
FINDING = "finding"
NOT_RUN = "not run"

#: how a check's figure is held to another's: ``rails_sum`` (a pair's bus bandwidth against the sum of
#: the other check's rails between the same nodes, :func:`nccl_against_rails`), ``same_ports`` (each
#: part's figure against the other check's rail between the same two ports,
#: :func:`gpudirect_against_host`), ``port_under`` (the figure over a netdev against the other check's
#: rail on the RDMA port under it, :func:`tcp_against_rdma`)
Relation = Literal["rails_sum", "same_ports", "port_under"]


@dataclass(frozen=True)
class Bound:
    """Another check's figure of the same hardware that bounds a check's figure: declared by the bounded
    check (``Check.bounded_by``). ``by``: the bounding check (its rails, ``extra["rails"]``);
    ``tolerance``: the share above the bound still within run-to-run difference; ``below``: under this
    share of the bound is a finding, not a fault (None: nothing is)."""

    by: str
    relation: Relation
    tolerance: float
    below: float | None = None


@dataclass(frozen=True)
class CrossCheck:
    """One cross-check: which two figures, whose is charged, and what was found."""

    name: str
    """``nccl vs rails``, ``gpudirect vs host rdma`` or ``tcp vs rdma``."""
    node: str
    """The node charged: the one whose tool printed the figure that cannot be."""
    status: str
    """:data:`CONSISTENT`, :data:`INCONSISTENT`, :data:`FINDING` or :data:`NOT_RUN` (why in :attr:`detail`)."""
    detail: str
    figure: float | None = None
    """The figure held to the bound (the NCCL, GPUDirect or TCP one)."""
    bound: float | None = None
    """What the other check measured that bounds it (the rails' sum, the host RDMA figure)."""
    unit: str = "Gb/s"
    tolerance: float | None = None

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON for the record."""
        return asdict(self)


def _pct(share: float) -> str:
    return f"{share * 100:.0f} %"


def nccl_against_rails(node: str, busbw_gbytes: float, rails_gbps: Mapping[str, float], *, by: str,
                       tolerance: float, below: float | None = None) -> CrossCheck:
    """A multi-node all_reduce's bus bandwidth (GB/s) against the sum of the node's rails (Gb/s each).

    ``node``: the node whose launcher printed the NCCL figure; ``rails_gbps``: ib_write_bw's
    figure of each rail of the same nodes, measured at once (rail name -> Gb/s), by check ``by``.
    """
    name = "nccl vs rails"
    if not rails_gbps:
        return CrossCheck(name, node, NOT_RUN, f"no rail was measured by {by} for these nodes")
    figure = busbw_gbytes * 8
    total = sum(rails_gbps.values())
    rails = ", ".join(f"{rail} {gbps:.1f}" for rail, gbps in sorted(rails_gbps.items()))
    said = (f"NCCL busbw {busbw_gbytes:.1f} GB/s = {figure:.1f} Gb/s against the sum of the rails {by} "
            f"measured, {total:.1f} Gb/s ({rails})")
    if figure > total * (1 + tolerance):
        return CrossCheck(name, node, INCONSISTENT,
                          f"{said}: {figure / total:.2f}x their sum, beyond the tolerance of {_pct(tolerance)}: "
                          f"a ring cannot carry more than its rails; the NCCL figure {node} printed cannot be",
                          figure, total, "Gb/s", tolerance)
    if below is not None and figure < total * below:
        return CrossCheck(name, node, FINDING,
                          f"{said}: {_pct(figure / total)} of them, under {_pct(below)}: the rails are not what "
                          "holds NCCL back; look at the GPU side (PCIe or NVLink paths, GPUDirect RDMA, NCCL's "
                          "settings)", figure, total, "Gb/s", tolerance)
    return CrossCheck(name, node, CONSISTENT, f"{said}: {_pct(figure / total)} of them, within what they carry",
                      figure, total, "Gb/s", tolerance)


def gpudirect_against_host(node: str, port: str, gpudirect_gbps: float, host_gbps: float | None, *, by: str,
                           tolerance: float) -> CrossCheck:
    """GPUDirect's figure on ``port`` (``mlx5_0/1->mlx5_0/1``) against host-memory RDMA on the same ports
    (check ``by``'s figure)."""
    name = "gpudirect vs host rdma"
    if host_gbps is None:
        return CrossCheck(name, node, NOT_RUN, f"{port}: {by} measured no rail between these ports",
                          gpudirect_gbps, None, "Gb/s", tolerance)
    said = f"{port}: GPUDirect {gpudirect_gbps:.1f} Gb/s, host memory {host_gbps:.1f} Gb/s over the same ports"
    if gpudirect_gbps > host_gbps * (1 + tolerance):
        return CrossCheck(name, node, INCONSISTENT,
                          f"{said}: {gpudirect_gbps / host_gbps:.2f}x, beyond the tolerance of {_pct(tolerance)}: "
                          f"GPU memory cannot go faster through a port than host memory did; the GPUDirect figure "
                          f"{node} printed cannot be", gpudirect_gbps, host_gbps, "Gb/s", tolerance)
    return CrossCheck(name, node, CONSISTENT, f"{said}: within", gpudirect_gbps, host_gbps, "Gb/s", tolerance)


def tcp_against_rdma(node: str, interface: str, port: str | None, tcp_gbps: float, rdma_gbps: float | None, *,
                     by: str, tolerance: float) -> CrossCheck:
    """TCP's figure over ``interface`` against the RDMA figure of ``port`` (check ``by``'s), the HCA port under it.

    ``port`` None: the interface is no RDMA port's netdev (a plain Ethernet NIC, a veth): nothing to hold it to.
    """
    name = "tcp vs rdma"
    if port is None:
        return CrossCheck(name, node, NOT_RUN, f"TCP ran over {interface}, which is no RDMA port's netdev",
                          tcp_gbps, None, "Gb/s", tolerance)
    if rdma_gbps is None:
        return CrossCheck(name, node, NOT_RUN, f"TCP ran over {interface} ({port}); {by} measured no "
                          f"rail on {port} between these nodes", tcp_gbps, None, "Gb/s", tolerance)
    said = f"TCP {tcp_gbps:.2f} Gb/s over {interface}, RDMA {rdma_gbps:.1f} Gb/s on {port} under it"
    if tcp_gbps > rdma_gbps * (1 + tolerance):
        return CrossCheck(name, node, INCONSISTENT,
                          f"{said}: {tcp_gbps / rdma_gbps:.2f}x, beyond the tolerance of {_pct(tolerance)}: TCP "
                          f"cannot carry more over a port than RDMA did; the TCP figure {node} printed cannot be",
                          tcp_gbps, rdma_gbps, "Gb/s", tolerance)
    return CrossCheck(name, node, CONSISTENT, f"{said}: within", tcp_gbps, rdma_gbps, "Gb/s", tolerance)


def failure(found: Iterable[CrossCheck]) -> str | None:
    """Why a check fails when a cross-check found its figure impossible; ``None`` when none did."""
    bad = [c for c in found if c.status == INCONSISTENT]
    if not bad:
        return None
    nodes = sorted({c.node for c in bad})
    return f"inconsistent on {', '.join(nodes)}: " + "; ".join(f"{c.node}: {c.name}: {c.detail}" for c in bad)


def summary(found: Sequence[CrossCheck]) -> str:
    """One line for the check's detail: each cross-check and what it found."""
    if not found:
        return "no cross-check ran"
    parts = []
    for name in dict.fromkeys(c.name for c in found):
        mine = [c for c in found if c.name == name]
        counts = {s: sum(1 for c in mine if c.status == s) for s in (CONSISTENT, INCONSISTENT, FINDING, NOT_RUN)}
        parts.append(f"{name}: " + ", ".join(f"{n} {s}" for s, n in counts.items() if n))
    return "cross-checked " + "; ".join(parts)
