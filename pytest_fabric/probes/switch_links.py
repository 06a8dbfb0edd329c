"""Switch links: ``iblinkinfo`` run once, from one node, judged for the switch ports facing the
inventory's nodes and the uplinks of the switches those are on.

iblinkinfo walks the whole subnet through the subnet manager's view, so links between two
switches, which no node's own checks can see, are judged too; what belongs to other nodes (storage
servers, other tenants' nodes and leaves) is left out (:func:`in_scope`). A link is bad when it is not
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

__all__ = ["BadLink", "bad_links", "in_scope", "read_links"]


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


def _host_of(description: str | None) -> str:
    """The host a CA's node description names: its first word (``node03 mlx5_0``, ``gpu07 HCA-1``),
    as rdma-ndd sets it from the host name, short and lower case."""
    words = (description or "").split()
    return words[0].split(".")[0].lower() if words else ""


def in_scope(ports: Iterable[IblinkinfoPort], hosts: Iterable[str]) -> tuple[list[IblinkinfoPort], int]:
    """(the switch ports the acceptance is about, how many other links were left out).

    The subnet holds more than the inventory: storage servers, other tenants' nodes and their
    leaves. Judged: the switch ports whose peer is a CA of one of ``hosts`` (by its node
    description's host name), and the links between switches where one end is a switch such a port
    is on (a leaf of ours: its uplinks carry our traffic). A link is counted once, as in
    :func:`bad_links`.
    """
    ours = {h.split(".")[0].lower() for h in hosts}
    ports = list(ports)
    switch_lids = {p.lid for p in ports if p.node_type == "Switch"}
    facing = [p for p in ports if p.node_type != "CA" and p.peer_lid is not None and p.peer_lid not in switch_lids
              and _host_of(p.peer_name) in ours]
    leaves = {p.lid for p in facing}
    facing_ids = {id(p) for p in facing}
    kept: list[IblinkinfoPort] = []
    others: set[frozenset[tuple[int, int]]] = set()
    for port in ports:
        if port.node_type == "CA" or port.peer_lid is None or port.peer_port is None:
            continue
        between_switches = port.peer_lid in switch_lids
        if id(port) in facing_ids or (between_switches and (port.lid in leaves or port.peer_lid in leaves)):
            kept.append(port)
        else:
            others.add(frozenset({(port.lid, port.port), (port.peer_lid, port.peer_port)}))
    return kept, len(others)


def read_links(node: NodeHandle) -> tuple[list[IblinkinfoPort], CommandResult]:
    """``iblinkinfo`` on ``node``: every port of the subnet it sees."""
    result = node.run("iblinkinfo", timeout=300)
    return parse_or_raise(parse_iblinkinfo, result), result
