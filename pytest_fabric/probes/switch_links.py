"""Switch links: ``iblinkinfo`` run once, from one node, judged for every switch port with a peer.

iblinkinfo walks the whole subnet through the subnet manager's view, so links between two
switches, which no node's own checks can see, are judged too. A link is bad when it is not
Active, narrower than ``width`` lanes, slower than ``rate``, or when iblinkinfo adds its
``( Could be ...)`` note: both ends support a faster speed or wider width than the link trained
at. A link between two switches is listed from both; it is judged once and named by both ends.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from decimal import Decimal

from pytest_fabric.parsers.iblinkinfo import IblinkinfoPort, parse_iblinkinfo
from pytest_fabric.probes.base import parse_or_raise
from pytest_fabric.run.cluster import NodeHandle
from pytest_fabric.transport.results import CommandResult

__all__ = ["BadLink", "bad_links", "read_links"]


@dataclass(frozen=True)
class BadLink:
    ends: str  # "leaf1 (0x08c0eb0300add04e) port 21 <-> node3 HCA-2 (LID 40) port 1"
    why: str

    def __str__(self) -> str:
        return f"{self.ends}: {self.why}"


def _end(port: IblinkinfoPort) -> str:
    guid = f" ({port.node_guid})" if port.node_guid else f" (LID {port.lid})"
    return f"{port.node_name or 'LID ' + str(port.lid)}{guid} port {port.port}"


def _peer(port: IblinkinfoPort) -> str:
    return f"{port.peer_name or '?'} (LID {port.peer_lid}) port {port.peer_port}"


def _link_text(port: IblinkinfoPort) -> str:
    rate = f" {port.rate_gbps.normalize():f} Gb/s" if port.rate_gbps is not None else ""
    return f"{port.width or '?'}{rate}"


def bad_links(ports: Iterable[IblinkinfoPort], *, width: int | None, rate_gbps: Decimal | None,
              could_be: bool) -> tuple[int, list[BadLink]]:
    """(links judged, the bad ones) among switch ports with a peer."""
    seen: set[frozenset[tuple[int, int]]] = set()
    judged = 0
    bad: list[BadLink] = []
    for port in ports:
        if port.node_type == "CA" or port.peer_lid is None or port.peer_port is None:
            continue  # a CA's line repeats a link its switch lists; a port with no peer is not a link
        key = frozenset({(port.lid, port.port), (port.peer_lid, port.peer_port)})
        if key in seen:
            continue
        seen.add(key)
        judged += 1
        why = []
        if port.state != "Active":
            why.append(f"{port.state}/{port.physical_state}, not Active")
        if width is not None and port.lanes is not None and port.lanes < width:
            why.append(f"{port.width} wide, expected {width}X")
        if rate_gbps is not None and port.rate_gbps is not None and port.rate_gbps < rate_gbps:
            why.append(f"{port.rate_gbps.normalize():f} Gb/s, expected {rate_gbps.normalize():f} Gb/s")
        if could_be and port.downgraded:
            why.append(f"iblinkinfo: {port.note}")  # "Could be 4X 53.125 Gbps", as the tool prints it
        if why:
            bad.append(BadLink(f"{_end(port)} <-> {_peer(port)}", f"{_link_text(port)}; " + "; ".join(why)))
    return judged, bad


def read_links(node: NodeHandle) -> tuple[list[IblinkinfoPort], CommandResult]:
    """``iblinkinfo`` on ``node``: every port of the subnet it sees."""
    result = node.run("iblinkinfo", timeout=300)
    return parse_or_raise(parse_iblinkinfo, result), result
