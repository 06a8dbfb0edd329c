"""``ip link show`` / ``ip -o link show`` / ``ip -j link show`` (iproute2): interfaces, MTU, state, MAC.

Multi-line form::

    2: eth0: <BROADCAST,MULTICAST,UP,LOWER_UP> mtu 1500 qdisc pfifo_fast state UP mode DEFAULT group default qlen 1000
        link/ether 08:00:27:05:ae:4d brd ff:ff:ff:ff:ff:ff

``-o`` puts each interface on one line, with ``\\`` where the line breaks were.
``-br`` (brief, iproute2 ``print_linkinfo_brief``) prints name (``@peer``), operstate,
link address when the device has one, and flags, and no MTU::

    lo               UNKNOWN        00:00:00:00:00:00 <LOOPBACK,UP,LOWER_UP>
    eth0@if12        UP             82:aa:8b:cc:2a:9e <BROADCAST,MULTICAST,UP,LOWER_UP>

Lines before the first interface (an ssh banner, a warning) and brief lines of
another shape are skipped and listed in the result's ``skipped``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from pytest_fabric.parsers._textscan import json_list, split_lines, to_int
from pytest_fabric.parsers.base import ParseError, SkippedLines, UnrecognizedOutput, register

__all__ = ["IpLinkInterface", "IpLinkInterfaces", "parse_ip_link"]

TOOL = "ip-link"

_HEAD_RE = re.compile(
    r"^(?P<index>[0-9]+):\s+(?P<name>[^:\s]+(?::[^:\s]+)*?):\s+<(?P<flags>[^>]*)>\s*(?P<rest>.*)$"
)
_OPERSTATES = "UP|DOWN|UNKNOWN|LOWERLAYERDOWN|DORMANT|NOTPRESENT|TESTING"
_BRIEF_RE = re.compile(
    rf"^(?P<name>[^\s@]+)(?:@(?P<peer>\S+))?\s+(?P<state>{_OPERSTATES})\s+"
    r"(?:(?P<mac>[0-9A-Fa-f]{2}(?:[:.-][0-9A-Fa-f]{2})+)\s+)?<(?P<flags>[^>]*)>\s*$"
)
_LINK_RE = re.compile(r"^link/(?P<type>\S+)(?:\s+(?P<mac>\S+))?(?:\s+(?:brd|peer)\s+(?P<brd>\S+))?")
_VALUE_KEYS = (
    "mtu",
    "qdisc",
    "state",
    "mode",
    "group",
    "qlen",
    "master",
    "link-netnsid",
    "numtxqueues",
    "numrxqueues",
)


@dataclass(frozen=True)
class IpLinkInterface:
    """One interface."""

    index: int | None  # None in the brief form, which prints no index
    name: str
    parent: str | None  # the part after '@' (veth peer, VLAN parent), if any
    flags: tuple[str, ...]  # BROADCAST, MULTICAST, UP, LOWER_UP, ...
    mtu_bytes: int | None
    state: str | None  # operstate: UP, DOWN, UNKNOWN, LOWERLAYERDOWN, ...
    qdisc: str | None = None
    mode: str | None = None
    group: str | None = None
    qlen: int | None = None
    master: str | None = None
    link_type: str | None = None  # ether, loopback, infiniband, none
    mac: str | None = None
    broadcast: str | None = None
    altnames: tuple[str, ...] = ()

    @property
    def is_up(self) -> bool:
        """Administratively up with carrier (``UP`` and ``LOWER_UP`` flags)."""
        return "UP" in self.flags and "LOWER_UP" in self.flags


class IpLinkInterfaces(list[IpLinkInterface]):
    """The interfaces in order, and the lines read past (``skipped``, ``skipped_count``)."""

    def __init__(
        self, interfaces: list[IpLinkInterface], skipped: SkippedLines | None = None
    ) -> None:
        super().__init__(interfaces)
        self.skipped: tuple[str, ...] = skipped.lines if skipped else ()
        self.skipped_count: int = skipped.count if skipped else 0


def _head_values(rest: str) -> dict[str, str]:
    words = rest.split()
    values: dict[str, str] = {}
    for position, word in enumerate(words[:-1]):
        if word in _VALUE_KEYS and word not in values:
            values[word] = words[position + 1]
    return values


def _parse_json(text: str) -> list[IpLinkInterface]:
    data = json_list(TOOL, text, "interfaces")
    interfaces = []
    for item in data:
        if (
            not isinstance(item, dict)
            or not isinstance(item.get("ifname"), str)
            or not isinstance(item.get("ifindex"), int)
        ):
            raise ParseError(TOOL, f"JSON interface without ifindex/ifname: {str(item)[:80]!r}")

        def text_of(key: str) -> str | None:
            value = item.get(key)  # noqa: B023 - called within this iteration
            return None if value is None or isinstance(value, (dict, list)) else str(value)

        mtu = item.get("mtu")
        qlen = item.get("txqlen")
        flags = item.get("flags", [])
        altnames = item.get("altnames")
        interfaces.append(
            IpLinkInterface(
                index=item["ifindex"],
                name=item["ifname"],
                parent=text_of("link"),
                flags=tuple(str(f) for f in flags) if isinstance(flags, list) else (),
                mtu_bytes=mtu if isinstance(mtu, int) and not isinstance(mtu, bool) else None,
                state=text_of("operstate"),
                qdisc=text_of("qdisc"),
                mode=text_of("linkmode"),
                group=text_of("group"),
                qlen=qlen if isinstance(qlen, int) and not isinstance(qlen, bool) else None,
                master=text_of("master"),
                link_type=text_of("link_type"),
                mac=text_of("address"),
                broadcast=text_of("broadcast"),
                altnames=tuple(a for a in altnames if isinstance(a, str))
                if isinstance(altnames, list)
                else (),
            )
        )
    return interfaces


@register(
    TOOL,
    "ip [-o|-j|-br] link show: interfaces with name, MTU (bytes), state, flags, MAC",
    corpus=("ip-link",),
)
def parse_ip_link(text: str) -> IpLinkInterfaces:
    """Parse ``ip link show`` in its multi-line, one-line (``-o``), brief (``-br``) or JSON (``-j``) form."""
    lines = split_lines(TOOL, text)
    if text.lstrip().startswith("["):
        return IpLinkInterfaces(_parse_json(text))
    skipped = SkippedLines()
    first = next(
        (line for line in lines if _HEAD_RE.match(line.strip()) or _BRIEF_RE.match(line.strip())),
        None,
    )
    if first is not None and not _HEAD_RE.match(first.strip()):
        return _parse_brief(lines, skipped)
    # -o joins an interface's lines with "\"; splitting there gives the multi-line form back.
    physical: list[tuple[int, str]] = []
    for number, line in enumerate(lines, start=1):
        for part in line.split("\\"):
            physical.append((number, part))
    blocks: list[tuple[int, re.Match[str], list[tuple[int, str]]]] = []
    for number, line in physical:
        stripped = line.strip()
        if not stripped:
            continue
        head = _HEAD_RE.match(stripped)
        if head:
            blocks.append((number, head, []))
            continue
        if not blocks:
            skipped.add(stripped)
            continue
        blocks[-1][2].append((number, stripped))
    if not blocks:
        raise UnrecognizedOutput(TOOL, "no 'N: name: <FLAGS>' line; is this ip link output?")
    return IpLinkInterfaces(
        [_build(number, head, extra) for number, head, extra in blocks], skipped
    )


def _parse_brief(lines: list[str], skipped: SkippedLines) -> IpLinkInterfaces:
    interfaces = []
    for line in lines:
        found = _BRIEF_RE.match(line.strip())
        if not found:
            skipped.add(line)
            continue
        interfaces.append(
            IpLinkInterface(
                index=None,
                name=found.group("name"),
                parent=found.group("peer"),
                flags=tuple(flag for flag in found.group("flags").split(",") if flag),
                mtu_bytes=None,
                state=found.group("state"),
                mac=found.group("mac"),
            )
        )
    return IpLinkInterfaces(interfaces, skipped)


def _build(number: int, head: re.Match[str], extra: list[tuple[int, str]]) -> IpLinkInterface:
    name, _, parent = head.group("name").partition("@")
    values = _head_values(head.group("rest"))
    link_type = mac = broadcast = None
    altnames: list[str] = []
    for _, line in extra:
        link = _LINK_RE.match(line)
        if link and link_type is None:
            link_type, mac, broadcast = link.group("type"), link.group("mac"), link.group("brd")
        elif line.startswith("altname "):
            altnames.append(line.split(None, 1)[1])
    return IpLinkInterface(
        index=int(head.group("index")),
        name=name,
        parent=parent or None,
        flags=tuple(flag for flag in head.group("flags").split(",") if flag),
        mtu_bytes=to_int(TOOL, values["mtu"], line=number, what="mtu") if "mtu" in values else None,
        state=values.get("state"),
        qdisc=values.get("qdisc"),
        mode=values.get("mode"),
        group=values.get("group"),
        qlen=to_int(TOOL, values["qlen"], line=number, what="qlen") if "qlen" in values else None,
        master=values.get("master"),
        link_type=link_type,
        mac=mac,
        broadcast=broadcast,
        altnames=tuple(altnames),
    )
