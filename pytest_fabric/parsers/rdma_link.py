"""``rdma link`` / ``rdma link show`` (iproute2): per RDMA port state and netdev.

Text lines are ``link <dev>/<port>`` followed by ``key value`` pairs::

    link irdma0/1 state DOWN physical_state DISABLED netdev enp23s0f0
    link mlx5_0/1 subnet_prefix fe80:0000:0000:0000 lid 5 sm_lid 1 lmc 0 state ACTIVE physical_state LINK_UP

``rdma -j link`` (a JSON list) is read too.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from pytest_fabric.parsers._textscan import json_list, split_lines, to_int
from pytest_fabric.parsers.base import ParseError, UnrecognizedOutput, register

__all__ = ["RdmaLink", "parse_rdma_link"]

TOOL = "rdma-link"

_LINK_RE = re.compile(r"^(?:[0-9]+:\s*)?link\s+(?P<device>[^/\s]+)/(?P<port>[0-9]+)(?P<rest>(?:\s.*)?)$")


@dataclass(frozen=True)
class RdmaLink:
    """One RDMA port."""

    device: str
    port: int
    state: str | None  # ACTIVE, DOWN, INIT, ARMED
    physical_state: str | None  # LINK_UP, DISABLED, POLLING, ...
    netdev: str | None
    lid: int | None = None
    sm_lid: int | None = None
    # Every key/value pair as printed (subnet_prefix, lmc, netdev_index, ...).
    attributes: dict[str, str] = field(default_factory=dict)


def _from_pairs(device: str, port: int, pairs: dict[str, str], line: int | None) -> RdmaLink:
    def integer(key: str) -> int | None:
        return to_int(TOOL, pairs[key], line=line, what=key) if key in pairs else None

    return RdmaLink(
        device=device,
        port=port,
        state=pairs.get("state"),
        physical_state=pairs.get("physical_state"),
        netdev=pairs.get("netdev"),
        lid=integer("lid"),
        sm_lid=integer("sm_lid"),
        attributes=dict(pairs),
    )


def _parse_json(text: str) -> list[RdmaLink]:
    data = json_list(TOOL, text, "links")
    links = []
    for item in data:
        if not isinstance(item, dict) or not isinstance(item.get("ifname"), str) or not isinstance(item.get("port"), int):
            raise ParseError(TOOL, f"JSON link entry without ifname/port: {str(item)[:80]!r}")
        pairs = {str(k): str(v) for k, v in item.items() if k not in ("ifname", "port", "ifindex") and not isinstance(v, (dict, list))}
        links.append(_from_pairs(item["ifname"], item["port"], pairs, None))
    return links


@register(TOOL, "rdma link [show] (iproute2): device/port, state, physical state, netdev", corpus=("rdma-link",))
def parse_rdma_link(text: str) -> list[RdmaLink]:
    """Parse ``rdma link`` text (or ``rdma -j link`` JSON) into one :class:`RdmaLink` per port."""
    lines = split_lines(TOOL, text)
    if text.lstrip().startswith("["):
        return _parse_json(text)
    links: list[RdmaLink] = []
    for number, line in enumerate(lines, start=1):
        stripped = line.strip()
        if not stripped:
            continue
        match = _LINK_RE.match(stripped)
        if not match:
            if not links:
                raise UnrecognizedOutput(TOOL, f"expected 'link <dev>/<port> ...', found {stripped[:80]!r}", line=number)
            raise ParseError(TOOL, f"not a 'link <dev>/<port> ...' line: {stripped[:80]!r}", line=number)
        tokens = match.group("rest").split()
        if len(tokens) % 2:
            raise ParseError(TOOL, f"odd number of key/value words after link {match.group('device')}", line=number)
        pairs = dict(zip(tokens[::2], tokens[1::2]))
        links.append(_from_pairs(match.group("device"), int(match.group("port")), pairs, number))
    if not links:
        raise UnrecognizedOutput(TOOL, "no 'link <dev>/<port>' line")
    return links
