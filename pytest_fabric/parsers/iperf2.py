"""iperf 2 client text output: text -> :class:`Iperf2Result`.

iperf 2 prints one line per stream per interval and, with ``-P N``, a ``[SUM]``
line.  The total is the ``[SUM]`` line (or the only stream's line) whose interval
starts at 0 and ends last: with ``-i`` the first interval also starts at 0, so the
start alone does not identify the summary.  Old versions print ``0.0- 1.0 sec``
(a space after the dash), newer ones ``0.0000-10.0047 sec``.

Rates are bits per second (iperf's ``Mbits/sec`` is 10^6 bit/s); byte amounts use
2^10 prefixes (``MBytes`` = 2^20 bytes) and keep the 3 digits iperf prints.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from pytest_fabric.parsers.base import SkippedLines, ToolReportedError, UnrecognizedOutput, register

__all__ = ["Iperf2Interval", "Iperf2Result", "parse"]

TOOL = "iperf2"

_LINE_RE = re.compile(
    r"^\[\s*(?P<id>\d+|SUM(?:-\d+)?)\]\s+(?P<start>\d+(?:\.\d+)?)\s*-\s*(?P<end>\d+(?:\.\d+)?)\s+sec\s+"
    r"(?P<amount>\d+(?:\.\d+)?)\s+(?P<amount_unit>[KMGT]?)Bytes\s+"
    r"(?P<rate>\d+(?:\.\d+)?)\s+(?P<rate_unit>[KMGT]?)bits/sec\b"
)
_CLIENT_RE = re.compile(
    r"^Client connecting to (?P<host>[^,\s]+), (?P<protocol>TCP|UDP) port (?P<port>\d+)"
)
_CONNECTED_RE = re.compile(r"^\[\s*(?P<id>\d+)\] local \S+ port \d+ connected with ")
_ERROR_RE = re.compile(
    r"^(?:connect failed|write failed|read failed|error|iperf: error|.*\bConnection refused\b).*",
    re.IGNORECASE,
)
# What a client prints besides its figures; read past without being listed as skipped.
_KNOWN_RE = re.compile(
    r"^(?:-{10,}|\[ ID\]|TCP window size|UDP buffer size|Write buffer size|Read buffer size|"
    r"Sending \d+ byte datagrams|Server listening|\[\s*(?:\d+|SUM)\] (?:Sent \d+ datagrams|Server Report:))",
    re.IGNORECASE,
)
_BYTES = {"": 1, "K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40}
_BITS = {"": 1, "K": 10**3, "M": 10**6, "G": 10**9, "T": 10**12}


@dataclass(frozen=True)
class Iperf2Interval:
    """One report line: a stream's (``stream_id``) or the sum's (``None``) figures for an interval."""

    stream_id: int | None
    start_s: float
    end_s: float
    transferred_bytes: int
    bps: float


@dataclass(frozen=True)
class Iperf2Result:
    """A parsed iperf 2 client run.  ``total_bps`` is the whole test's rate over all streams."""

    remote_host: str | None
    port: int | None
    protocol: str
    num_streams: int
    total_bps: float
    total_bytes: int
    duration_s: float
    streams: tuple[Iperf2Interval, ...]
    """Each stream's whole-test line, ordered by stream id."""
    intervals: tuple[Iperf2Interval, ...]
    """Every report line in the order printed (per-stream and ``[SUM]``), summaries included."""
    skipped: tuple[str, ...] = ()
    """Lines the parser did not know, each once (the first 100): read past, not fatal."""
    skipped_count: int = 0
    """How many lines were skipped in all, repeats included."""


def _interval(match: re.Match[str]) -> Iperf2Interval:
    ident = match.group("id")
    return Iperf2Interval(
        stream_id=None if ident.startswith("SUM") else int(ident),
        start_s=float(match.group("start")),
        end_s=float(match.group("end")),
        transferred_bytes=round(float(match.group("amount")) * _BYTES[match.group("amount_unit")]),
        bps=float(match.group("rate")) * _BITS[match.group("rate_unit")],
    )


def _whole_test(lines: list[Iperf2Interval]) -> Iperf2Interval | None:
    from_zero = [line for line in lines if line.start_s == 0.0]
    if not from_zero:
        return None
    latest = max(line.end_s for line in from_zero)
    return [line for line in from_zero if line.end_s == latest][-1]


@register(
    TOOL,
    "iperf 2 client text output (-P N with [SUM], -i intervals): total bit/s",
    corpus=("iperf2",),
)
def parse(text: str) -> Iperf2Result:
    """Parse ``iperf -c HOST [-P N] [-i S]`` (iperf 2) client output.

    ``connect failed`` and similar failures raise :class:`ToolReportedError`.
    """
    if not isinstance(text, str):
        raise UnrecognizedOutput(TOOL, f"expected text, got {type(text).__name__}")
    host: str | None = None
    port: int | None = None
    protocol = "TCP"
    connected: set[int] = set()
    intervals: list[Iperf2Interval] = []
    errors: list[str] = []
    skipped = SkippedLines()
    for raw in text.splitlines():
        line = raw.strip()
        if not line:
            continue
        if client := _CLIENT_RE.match(line):
            host, protocol, port = (
                client.group("host"),
                client.group("protocol"),
                int(client.group("port")),
            )
            continue
        if connection := _CONNECTED_RE.match(line):
            connected.add(int(connection.group("id")))
            continue
        if match := _LINE_RE.match(line):
            intervals.append(_interval(match))
            continue
        if _ERROR_RE.match(line):
            errors.append(line)
        elif not _KNOWN_RE.match(line):
            skipped.add(line)
    if errors and not intervals:
        raise ToolReportedError(TOOL, "; ".join(errors))
    if not intervals:
        raise UnrecognizedOutput(TOOL, "no iperf '[ ID] ... sec ... bits/sec' report lines found")
    if errors:
        # A stream failed part-way: the figures cover less than the test asked for.
        raise ToolReportedError(TOOL, "; ".join(errors))

    stream_ids = sorted({i.stream_id for i in intervals if i.stream_id is not None} | connected)
    streams: list[Iperf2Interval] = []
    for stream_id in stream_ids:
        whole = _whole_test([i for i in intervals if i.stream_id == stream_id])
        if whole is not None:
            streams.append(whole)
    total = _whole_test([i for i in intervals if i.stream_id is None])
    if total is None:
        if len(streams) == 1:
            total = streams[0]
        elif streams:
            # Some iperf 2 builds leave out [SUM] when streams end at different times.
            total = Iperf2Interval(
                None,
                0.0,
                max(s.end_s for s in streams),
                sum(s.transferred_bytes for s in streams),
                sum(s.bps for s in streams),
            )
        else:
            raise UnrecognizedOutput(
                TOOL, "no report line covering the whole test (interval from 0)"
            )
    return Iperf2Result(
        remote_host=host,
        port=port,
        protocol=protocol,
        num_streams=len(stream_ids),
        total_bps=total.bps,
        total_bytes=total.transferred_bytes,
        duration_s=total.end_s - total.start_s,
        streams=tuple(streams),
        intervals=tuple(intervals),
        skipped=skipped.lines,
        skipped_count=skipped.count,
    )
