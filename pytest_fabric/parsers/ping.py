"""iputils ``ping`` output: text -> :class:`PingResult`.

Reads the per-reply lines (``64 bytes from ...: icmp_seq=1 ttl=64 time=0.047 ms``,
``(DUP!)`` marks a duplicate) and the statistics block (transmitted, received,
``+N duplicates``, ``+N errors``, loss %, ``rtt min/avg/max/mdev``).  BusyBox's
``round-trip min/avg/max`` line is read too.  A ping that could not start
(unknown host, network unreachable) raises :class:`ToolReportedError`; 100% loss is
a measurement, not an error: the result has ``loss_percent == 100`` and no rtt.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from pytest_fabric.parsers.base import ToolReportedError, UnrecognizedOutput, register

__all__ = ["PingReply", "PingResult", "parse"]

TOOL = "ping"

_HEADER_RE = re.compile(r"^PING (?P<host>\S+) \((?P<address>[^)]+)\)(?: from \S+(?: \S+)?:?)? (?P<size>\d+)\(\d+\) bytes")
_REPLY_RE = re.compile(
    r"^(?P<bytes>\d+) bytes from (?P<source>.+?): icmp_[rs]eq=(?P<seq>\d+) ttl=(?P<ttl>\d+) "
    r"time[=<](?P<time>\d+(?:\.\d+)?) ms(?P<dup> \(DUP!\))?"
)
_STATS_RE = re.compile(
    r"^(?P<tx>\d+) packets transmitted, (?P<rx>\d+) (?:packets )?received"
    r"(?:, \+(?P<dups>\d+) duplicates)?(?:, \+(?P<errors>\d+) errors)?"
    r", (?P<loss>\d+(?:\.\d+)?)% packet loss(?:, time (?P<time>\d+)ms)?"
)
_RTT_RE = re.compile(
    r"^(?:rtt|round-trip) min/avg/max(?:/(?:mdev|stddev))? = "
    r"(?P<min>\d+(?:\.\d+)?)/(?P<avg>\d+(?:\.\d+)?)/(?P<max>\d+(?:\.\d+)?)(?:/(?P<mdev>\d+(?:\.\d+)?))? ms"
)
_ERROR_RE = re.compile(
    r"^(?:ping: .*|connect: .*|.*(?:Name or service not known|Network is unreachable|unknown host|"
    r"Temporary failure in name resolution|Operation not permitted).*)$",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class PingReply:
    """One echo reply line."""

    seq: int
    ttl: int
    time_ms: float
    duplicate: bool


@dataclass(frozen=True)
class PingResult:
    """A parsed ping run: counts, loss, round-trip statistics (ms) and each reply."""

    host: str | None
    address: str | None
    payload_bytes: int | None
    transmitted: int
    received: int
    duplicates: int
    errors: int
    loss_percent: float
    time_ms: int | None
    """Wall time of the run as ping reports it."""
    rtt_min_ms: float | None
    rtt_avg_ms: float | None
    rtt_max_ms: float | None
    rtt_mdev_ms: float | None
    replies: tuple[PingReply, ...]


@register(TOOL, "iputils ping: loss %, duplicates, rtt min/avg/max/mdev in ms, per-reply lines", corpus=("ping",))
def parse(text: str) -> PingResult:
    """Parse ``ping HOST -c N`` (iputils; BusyBox summary lines too)."""
    if not isinstance(text, str):
        raise UnrecognizedOutput(TOOL, f"expected text, got {type(text).__name__}")
    header = stats = rtt = None
    replies: list[PingReply] = []
    errors: list[str] = []
    for raw in text.splitlines():
        line = raw.strip()
        if not line:
            continue
        if found := _HEADER_RE.match(line):
            header = header or found
        elif found := _REPLY_RE.match(line):
            replies.append(
                PingReply(int(found.group("seq")), int(found.group("ttl")), float(found.group("time")), bool(found.group("dup")))
            )
        elif found := _STATS_RE.match(line):
            stats = found
        elif found := _RTT_RE.match(line):
            rtt = found
        elif _ERROR_RE.match(line):
            errors.append(line)
    if stats is None:
        if errors:
            raise ToolReportedError(TOOL, "; ".join(errors))
        raise UnrecognizedOutput(TOOL, "no 'N packets transmitted, N received' statistics line (run cut short?)")

    def rtt_value(name: str) -> float | None:
        return None if rtt is None or rtt.group(name) is None else float(rtt.group(name))

    time = stats.group("time")
    return PingResult(
        host=header.group("host") if header else None,
        address=header.group("address") if header else None,
        payload_bytes=int(header.group("size")) if header else None,
        transmitted=int(stats.group("tx")),
        received=int(stats.group("rx")),
        duplicates=int(stats.group("dups") or 0),
        errors=int(stats.group("errors") or 0),
        loss_percent=float(stats.group("loss")),
        time_ms=None if time is None else int(time),
        rtt_min_ms=rtt_value("min"),
        rtt_avg_ms=rtt_value("avg"),
        rtt_max_ms=rtt_value("max"),
        rtt_mdev_ms=rtt_value("mdev"),
        replies=tuple(replies),
    )
