"""``rdma statistic show [link DEV/PORT]`` (iproute2): an RDMA port's hardware counters by name.

One line per port, the name/value pairs after ``link DEV/PORT`` (the same
counters as ``/sys/class/infiniband/DEV/ports/PORT/hw_counters``)::

    link mlx5_2/1 rx_write_requests 8 rx_read_requests 4 rx_atomic_requests 0 out_of_buffer 0
    out_of_sequence 0 duplicate_request 0 rnr_nak_retry_err 0 packet_seq_err 0 ...

(the layout of Mark Zhang's iproute2 patch adding ``rdma stat show``; the names are
the driver's: mlx5 prints the ones above).  ``rdma -j statistic show`` JSON, a list
of ``{"ifname": ..., "port": ..., name: value}`` objects, is read too.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from pytest_fabric.parsers._textscan import json_list, split_lines, to_int
from pytest_fabric.parsers.base import ParseError, UnrecognizedOutput, register

__all__ = ["RdmaStatistic", "parse_rdma_statistic"]

TOOL = "rdma-statistic"

_LINK_RE = re.compile(r"^link\s+(?P<device>[^/\s]+)/(?P<port>[0-9]+)(?P<rest>(?:\s.*)?)$")
_INT_RE = re.compile(r"^[0-9]+$")


@dataclass(frozen=True)
class RdmaStatistic:
    """One port's counters."""

    device: str
    port: int
    counters: dict[str, int] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return f"{self.device}/{self.port}"


def _pairs(device: str, tokens: list[str], line: int | None) -> dict[str, int]:
    if len(tokens) % 2:
        raise ParseError(TOOL, f"odd number of name/value words after link {device}", line=line)
    counters: dict[str, int] = {}
    for name, value in zip(tokens[::2], tokens[1::2]):
        if not _INT_RE.match(value):
            raise ParseError(TOOL, f"counter {name!r} of {device} has value {value!r}, not a count", line=line)
        counters[name] = to_int(TOOL, value, line=line, what=name)
    return counters


def _parse_json(text: str) -> list[RdmaStatistic]:
    out = []
    for item in json_list(TOOL, text, "ports"):
        if not isinstance(item, dict) or not isinstance(item.get("ifname"), str) or not isinstance(item.get("port"), int):
            raise ParseError(TOOL, f"JSON entry without ifname/port: {str(item)[:80]!r}")
        counters = {}
        for key, value in item.items():
            if key in ("ifname", "port", "ifindex"):
                continue
            if not isinstance(value, int) or isinstance(value, bool):
                raise ParseError(TOOL, f"counter {key!r} of {item['ifname']} is {value!r}, not a count")
            counters[str(key)] = value
        out.append(RdmaStatistic(item["ifname"], item["port"], counters))
    if not out:
        raise UnrecognizedOutput(TOOL, "an empty JSON list: no port has counters")
    return out


@register(TOOL, "rdma statistic show [link DEV/PORT] (iproute2): hardware counters per RDMA port", corpus=())
def parse_rdma_statistic(text: str) -> list[RdmaStatistic]:
    """Parse ``rdma statistic show`` text (or ``-j`` JSON) into one :class:`RdmaStatistic` per port."""
    lines = split_lines(TOOL, text)
    if text.lstrip().startswith("["):
        return _parse_json(text)
    out: list[RdmaStatistic] = []
    for number, line in enumerate(lines, start=1):
        stripped = line.strip()
        if not stripped:
            continue
        match = _LINK_RE.match(stripped)
        if match:
            device = match.group("device")
            out.append(RdmaStatistic(device, int(match.group("port")), _pairs(device, match.group("rest").split(), number)))
            continue
        if not out:
            raise UnrecognizedOutput(TOOL, f"expected 'link <dev>/<port> <counter> <value> ...', found {stripped[:80]!r}",
                                     line=number)
        # A long line wrapped by a terminal or a mail client: more pairs of the port above.
        previous = out[-1]
        more = _pairs(previous.device, stripped.split(), number)
        previous.counters.update(more)
    if not out:
        raise UnrecognizedOutput(TOOL, "no 'link <dev>/<port>' line")
    return out
