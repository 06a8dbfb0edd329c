"""iperf3 output, JSON (``-J``, ``--json-stream``) or text, client or server: text -> :class:`Iperf3Result`.

JSON is read from iperf3 3.0.11 (no ``sender`` flags in the sums) through 3.9 and
later; a JSON document with an ``"error"`` key is a failed run even when it also
holds intervals (an interrupted test still writes them), so it raises
:class:`ToolReportedError`.  The text format is read including the multi-threaded
iperf3 >= 3.16 layout, where each stream's interval boundaries differ from the
``[SUM]`` line's; totals come only from the final sender/receiver summary lines,
never from summing intervals.

Rates are bits per second (10^3 prefixes, as iperf3 prints them); byte amounts in
text output use iperf3's 2^10 prefixes (``GBytes`` = 2^30 bytes) and are therefore
rounded to the 3 significant digits printed.

Sender and receiver figures are each read from the side iperf3 wrote them for,
never copied from the other: a UDP receiver gets less than was sent when packets
are lost.  Before iperf3 3.11 (esnet/iperf#1174) a UDP client's JSON had only
``end.sum``, the sender's bytes and rate with the receiver's jitter and loss; the
receiver's rate and bytes are then ``None`` (iperf3 did not say), not the sender's.
Durations are what the run took (``seconds`` of each side's summary), not the
``-t`` asked for, which is 0 for a run bounded by ``-n``/``-k``.

Every figure says which way it went (:attr:`Iperf3Result.direction`): a plain
run's data goes client to server, ``-R``'s server to client.  A ``--bidir`` run
(iperf3 3.7 and later, text ``[TX-C]``/``[RX-C]``, JSON ``sum_sent``/``sum_received``
and ``sum_sent_bidir_reverse``/``sum_received_bidir_reverse``) carries both: the
top-level figures are the client-to-server flow, as iperf3 names them, and
:attr:`Iperf3Result.bidir_reverse` the server-to-client one.  They are never added
together: each direction is judged on its own figure.  ``--json-stream`` lines
(3.17 and later) are read as the JSON report they stand for.  ``warning: ...``
lines are kept in ``warnings``; a line the parser does not know is kept in
``skipped`` and the rest is read.  A TCP receiver that reports 0 bytes of what was
sent (a client interrupted before the server's figures came back, iperf3 3.16+
still exiting 0) is a run cut short, not a measurement.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from pytest_fabric.parsers.base import (
    ParseError,
    SkippedLines,
    ToolReportedError,
    UnrecognizedOutput,
    register,
)

__all__ = [
    "CLIENT_TO_SERVER",
    "SERVER_TO_CLIENT",
    "Iperf3Flow",
    "Iperf3Interval",
    "Iperf3Result",
    "Iperf3Stream",
    "parse",
    "parse_json",
    "parse_text",
]

TOOL = "iperf3"
CLIENT_TO_SERVER = "client-to-server"
"""The data went from the iperf3 client to the server (a plain run, ``[TX-C]``/``[RX-S]``)."""
SERVER_TO_CLIENT = "server-to-client"
"""The data went from the server to the client (``-R``, the reverse half of ``--bidir``)."""


@dataclass(frozen=True)
class Iperf3Stream:
    """One TCP/UDP stream's final figures (``None`` where the output does not say)."""

    stream_id: int
    """The socket number (JSON) or the ``[ ID]`` (text)."""
    sent_bps: float | None
    received_bps: float | None
    sent_bytes: int | None
    received_bytes: int | None
    retransmits: int | None


@dataclass(frozen=True)
class Iperf3Interval:
    """One reporting interval of the whole test (the ``[SUM]`` line, or the only stream's line)."""

    start_s: float
    end_s: float
    bps: float


@dataclass(frozen=True)
class Iperf3Result:
    """A parsed iperf3 client run.  ``sent_bps``/``received_bps`` are the test totals."""

    format: str
    """``json`` or ``text``: which output was read."""
    version: str | None
    """``3.9``; ``None`` in text output, which does not print it."""
    protocol: str
    """``TCP`` or ``UDP``."""
    num_streams: int
    duration_s: float | None
    """How long the test ran (the sender's side), as measured; not the ``-t`` asked for."""
    remote_host: str | None
    reverse: bool | None
    """``-R`` (server sends); ``None`` where the output does not say."""
    streams: tuple[Iperf3Stream, ...]
    sent_bps: float
    received_bps: float | None
    """The receiver's rate; ``None`` where iperf3 did not write the receiver's side (UDP before 3.11)."""
    sent_bytes: int | None
    received_bytes: int | None
    retransmits: int | None
    """TCP retransmissions over the whole test (sender side); ``None`` for UDP or when not printed."""
    cpu_host_total_percent: float | None
    cpu_remote_total_percent: float | None
    jitter_ms: float | None
    """UDP only."""
    lost_percent: float | None
    """UDP only, as the receiver counted it."""
    intervals: tuple[Iperf3Interval, ...]
    received_duration_s: float | None = None
    """How long the receiver's side of the test lasted; ``None`` where iperf3 did not write it."""
    lost_packets: int | None = None
    """UDP only: datagrams the receiver found missing."""
    packets: int | None = None
    """UDP only: datagrams in the test, as the receiver counted them."""
    direction: str = CLIENT_TO_SERVER
    """Which way the top-level figures went: :data:`CLIENT_TO_SERVER` or :data:`SERVER_TO_CLIENT` (``-R``)."""
    side: str | None = None
    """``client`` or ``server``: whose output this is; ``None`` where the output does not say."""
    bidir: bool = False
    """``--bidir``: :attr:`bidir_reverse` holds the server-to-client figures."""
    bidir_reverse: Iperf3Flow | None = None
    """The server-to-client flow of a ``--bidir`` run; ``None`` otherwise."""
    warnings: tuple[str, ...] = ()
    """``warning: ...`` lines iperf3 printed (stderr captured with stdout)."""
    skipped: tuple[str, ...] = ()
    """Lines the parser did not know, each once (the first 100)."""
    skipped_count: int = 0
    """How many lines were skipped in all, repeats included."""

    @property
    def flows(self) -> tuple[Iperf3Flow, ...]:
        """Each direction the test carried, the top-level one first (two for ``--bidir``)."""
        own = Iperf3Flow(
            direction=self.direction,
            streams=self.streams,
            sent_bps=self.sent_bps,
            received_bps=self.received_bps,
            sent_bytes=self.sent_bytes,
            received_bytes=self.received_bytes,
            retransmits=self.retransmits,
            duration_s=self.duration_s,
            received_duration_s=self.received_duration_s,
        )
        return (own,) if self.bidir_reverse is None else (own, self.bidir_reverse)


@dataclass(frozen=True)
class Iperf3Flow:
    """One direction's totals: what its sender sent and its receiver got (``None`` where not written)."""

    direction: str
    """:data:`CLIENT_TO_SERVER` or :data:`SERVER_TO_CLIENT`."""
    streams: tuple[Iperf3Stream, ...]
    sent_bps: float | None
    received_bps: float | None
    sent_bytes: int | None
    received_bytes: int | None
    retransmits: int | None
    duration_s: float | None
    received_duration_s: float | None


# --- JSON ---------------------------------------------------------------------------------------


def _number(value: Any, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ParseError(TOOL, f"{what}: expected a number, got {value!r}")
    return float(value)


def _optional_number(value: Any, what: str) -> float | None:
    return None if value is None else _number(value, what)


def _optional_int(value: Any, what: str) -> int | None:
    return None if value is None else int(_number(value, what))


def _dict(value: Any, what: str) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ParseError(TOOL, f"{what}: expected an object, got {type(value).__name__}")
    return value


def _list(value: Any, what: str) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise ParseError(TOOL, f"{what}: expected a list, got {type(value).__name__}")
    return value


def _outside_lines(text: str, warnings: list[str], skipped: SkippedLines) -> None:
    """Sort the lines around a JSON report: ``warning:`` lines, iperf3's own errors, the rest skipped."""
    errors = []
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line in ("^C", "^C^C"):
            continue
        if _ERROR_RE.match(line):
            errors.append(line)
        elif _WARNING_RE.match(line):
            warnings.append(line)
        else:
            skipped.add(line)
    if errors:
        raise ToolReportedError(TOOL, "; ".join(errors))


def _load_json(text: str, warnings: list[str], skipped: SkippedLines) -> dict[str, Any]:
    """The report object, and the lines outside it sorted (a terminal's ``^C``, stderr's warnings)."""
    start = text.find("{")
    if start < 0:
        raise UnrecognizedOutput(TOOL, "no JSON object in the output")
    try:
        document, length = json.JSONDecoder().raw_decode(text[start:])
    except json.JSONDecodeError as exc:
        raise UnrecognizedOutput(
            TOOL, f"invalid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}"
        ) from None
    except RecursionError:
        raise UnrecognizedOutput(TOOL, "invalid JSON: nested too deeply") from None
    if not isinstance(document, dict):
        raise UnrecognizedOutput(
            TOOL, f"JSON is a {type(document).__name__}, not an iperf3 report object"
        )
    if not document.get("error"):  # a failed run's own words come first
        _outside_lines(text[:start] + "\n" + text[start + length :], warnings, skipped)
    return document


def _json_stream(text: str, warnings: list[str], skipped: SkippedLines) -> dict[str, Any]:
    """``--json-stream``: one ``{"event": ..., "data": ...}`` object a line, gathered into one report."""
    document: dict[str, Any] = {}
    intervals: list[Any] = []
    outside = []
    for raw in text.splitlines():
        line = raw.strip()
        if not line.startswith('{"event"'):
            outside.append(line)
            continue
        try:
            event = json.loads(line)
        except json.JSONDecodeError:
            skipped.add(line)  # a line cut short (the run was killed while writing it)
            continue
        kind = event.get("event") if isinstance(event, dict) else None
        data = event.get("data") if isinstance(event, dict) else None
        if kind == "interval":
            intervals.append(data)
        elif kind in ("start", "end", "error"):
            document[kind] = data
        else:
            skipped.add(line)
    document["intervals"] = intervals
    if not document.get("error"):
        _outside_lines("\n".join(outside), warnings, skipped)
    return document


def _is_json_stream(text: str) -> bool:
    return text.lstrip().startswith('{"event"')


def parse_json(text: str) -> Iperf3Result:
    """Parse ``iperf3 -c HOST -J`` output (iperf3 3.0.11 and later), or ``--json-stream`` lines.

    Raises :class:`ToolReportedError` when the document has an ``"error"`` key, quoting it.
    """
    if not isinstance(text, str):
        raise UnrecognizedOutput(TOOL, f"expected text, got {type(text).__name__}")
    warnings: list[str] = []
    skipped = SkippedLines()
    if _is_json_stream(text):
        document = _json_stream(text, warnings, skipped)
    else:
        document = _load_json(text, warnings, skipped)
    error = document.get("error")
    if error:
        raise ToolReportedError(TOOL, f"iperf3 reported an error: {error}")
    if "start" not in document and "end" not in document:
        raise UnrecognizedOutput(TOOL, "JSON has neither 'start' nor 'end': not an iperf3 report")
    start = _dict(document.get("start"), "start")
    end = _dict(document.get("end"), "end")
    test_start = _dict(start.get("test_start"), "start.test_start")
    protocol = str(test_start.get("protocol") or "TCP").upper()
    is_udp = protocol == "UDP"
    side = (
        "client"
        if "connecting_to" in start
        else "server"
        if "accepted_connection" in start
        else None
    )
    reverse = test_start.get("reverse")
    bidir = bool(test_start.get("bidir")) or "sum_sent_bidir_reverse" in end
    forward = SERVER_TO_CLIENT if reverse and not bidir else CLIENT_TO_SERVER

    sum_sent = _dict(end.get("sum_sent"), "end.sum_sent")
    sum_received = _dict(end.get("sum_received"), "end.sum_received")
    udp_sum = _dict(end.get("sum"), "end.sum")
    if not sum_sent and not sum_received and not udp_sum:
        raise UnrecognizedOutput(
            TOOL, "JSON has no end.sum_sent / end.sum_received / end.sum (run cut short?)"
        )
    # UDP before 3.11 has only end.sum: the sender's bytes and rate with the receiver's jitter and
    # loss.  It stands in for the sender's side, never for the receiver's (TCP always has both).
    sent_source = sum_sent or udp_sum
    received_source = sum_received
    loss_source = sum_received or udp_sum

    streams: dict[str, list[Iperf3Stream]] = {CLIENT_TO_SERVER: [], SERVER_TO_CLIENT: []}
    for index, entry in enumerate(_list(end.get("streams"), "end.streams")):
        entry = _dict(entry, f"end.streams[{index}]")
        sender = _dict(entry.get("sender"), f"end.streams[{index}].sender")
        receiver = _dict(entry.get("receiver"), f"end.streams[{index}].receiver")
        udp = _dict(entry.get("udp"), f"end.streams[{index}].udp")
        socket = sender.get("socket", receiver.get("socket", udp.get("socket", index)))
        stream = Iperf3Stream(
            stream_id=int(_number(socket, f"end.streams[{index}] socket")),
            # A UDP stream's "udp" entry is the sender's view (bytes sent), like end.sum.
            sent_bps=_optional_number(
                (sender or udp).get("bits_per_second"), "sender bits_per_second"
            ),
            received_bps=_optional_number(
                receiver.get("bits_per_second"), "receiver bits_per_second"
            ),
            sent_bytes=_optional_int((sender or udp).get("bytes"), "sender bytes"),
            received_bytes=_optional_int(receiver.get("bytes"), "receiver bytes"),
            retransmits=_optional_int(sender.get("retransmits"), "sender retransmits"),
        )
        direction = forward
        if bidir:
            # Each stream's "sender" flag says whether the side writing the report sent on it.
            local_sent = (sender or receiver or udp).get("sender")
            if local_sent is not None:
                direction = (
                    CLIENT_TO_SERVER if bool(local_sent) == (side != "server") else SERVER_TO_CLIENT
                )
        streams[direction].append(stream)

    intervals: list[Iperf3Interval] = []
    for index, interval in enumerate(_list(document.get("intervals"), "intervals")):
        total = _dict(_dict(interval, f"intervals[{index}]").get("sum"), f"intervals[{index}].sum")
        if total.get("omitted"):
            continue  # -O warm-up seconds are not part of the measurement
        if {"start", "end", "bits_per_second"} <= total.keys():
            intervals.append(
                Iperf3Interval(
                    start_s=_number(total["start"], "interval start"),
                    end_s=_number(total["end"], "interval end"),
                    bps=_number(total["bits_per_second"], "interval bits_per_second"),
                )
            )

    reverse_flow = None
    if bidir:
        reverse_sent = _dict(end.get("sum_sent_bidir_reverse"), "end.sum_sent_bidir_reverse")
        reverse_received = _dict(
            end.get("sum_received_bidir_reverse"), "end.sum_received_bidir_reverse"
        )
        reverse_flow = Iperf3Flow(
            direction=SERVER_TO_CLIENT,
            streams=tuple(streams[SERVER_TO_CLIENT]),
            sent_bps=_optional_number(reverse_sent.get("bits_per_second"), "reverse sent bps"),
            received_bps=_optional_number(
                reverse_received.get("bits_per_second"), "reverse received bps"
            ),
            sent_bytes=_optional_int(reverse_sent.get("bytes"), "reverse sent bytes"),
            received_bytes=_optional_int(reverse_received.get("bytes"), "reverse received bytes"),
            retransmits=_optional_int(reverse_sent.get("retransmits"), "reverse retransmits"),
            duration_s=_optional_number(reverse_sent.get("seconds"), "reverse sent seconds"),
            received_duration_s=_optional_number(
                reverse_received.get("seconds"), "reverse received seconds"
            ),
        )

    connecting = _dict(start.get("connecting_to"), "start.connecting_to")
    connected = _list(start.get("connected"), "start.connected")
    remote = connecting.get("host")
    if remote is None and connected and isinstance(connected[0], dict):
        remote = connected[0].get("remote_host")
    cpu = _dict(end.get("cpu_utilization_percent"), "end.cpu_utilization_percent")
    version = start.get("version")
    num_streams = test_start.get("num_streams")
    duration = _optional_number(sent_source.get("seconds"), "end sent seconds")
    if duration is None:  # iperf3 too old to write the seconds a side took
        duration = _optional_number(test_start.get("duration"), "duration")
    own_streams = tuple(streams[forward])
    return Iperf3Result(
        format="json",
        version=str(version).removeprefix("iperf ").strip() if version is not None else None,
        protocol=protocol,
        num_streams=int(_number(num_streams, "num_streams"))
        if num_streams is not None
        else len(own_streams),
        duration_s=duration,
        remote_host=None if remote is None else str(remote),
        reverse=None if reverse is None else bool(reverse),
        streams=own_streams,
        sent_bps=_number(sent_source.get("bits_per_second"), "end sent bits_per_second"),
        received_bps=(
            _number(received_source.get("bits_per_second"), "end received bits_per_second")
            if received_source
            else None
        ),
        sent_bytes=_optional_int(sent_source.get("bytes"), "end sent bytes"),
        received_bytes=_optional_int(received_source.get("bytes"), "end received bytes"),
        retransmits=_optional_int(sum_sent.get("retransmits"), "end.sum_sent.retransmits"),
        cpu_host_total_percent=_optional_number(cpu.get("host_total"), "cpu host_total"),
        cpu_remote_total_percent=_optional_number(cpu.get("remote_total"), "cpu remote_total"),
        jitter_ms=_optional_number(loss_source.get("jitter_ms"), "jitter_ms") if is_udp else None,
        lost_percent=_optional_number(loss_source.get("lost_percent"), "lost_percent")
        if is_udp
        else None,
        intervals=tuple(intervals),
        received_duration_s=_optional_number(
            received_source.get("seconds"), "end received seconds"
        ),
        lost_packets=_optional_int(loss_source.get("lost_packets"), "lost_packets")
        if is_udp
        else None,
        packets=_optional_int(loss_source.get("packets"), "packets") if is_udp else None,
        direction=forward,
        side=side,
        bidir=bidir,
        bidir_reverse=reverse_flow,
        warnings=tuple(warnings),
        skipped=skipped.lines,
        skipped_count=skipped.count,
    )


# --- text ---------------------------------------------------------------------------------------

_LINE_RE = re.compile(
    r"^\[\s*(?P<id>\d+|SUM)\](?:\[(?P<tag>[TR]X-[CS])\])?\s+"
    r"(?P<start>\d+(?:\.\d+)?)-\s*(?P<end>\d+(?:\.\d+)?)\s+sec\s+"
    r"(?P<amount>\d+(?:\.\d+)?)\s+(?P<amount_unit>[KMGT]?)Bytes\s+"
    r"(?P<rate>\d+(?:\.\d+)?)\s+(?P<rate_unit>[KMGT]?)bits/sec"
    r"(?P<rest>.*?)\s*(?P<role>sender|receiver)?\s*$"
)
_UDP_REST_RE = re.compile(
    r"(?P<jitter>\d+(?:\.\d+)?)\s+ms\s+(?P<lost>\d+)/\s*(?P<total>\d+)\s+\((?P<pct>\d+(?:\.\d+)?(?:e[-+]?\d+)?)%\)"
)
_RETR_RE = re.compile(r"^\s*(?P<retr>\d+)\b")
_CONNECTING_RE = re.compile(r"^Connecting to host (?P<host>\S+?),? port (?P<port>\d+)")
_CONNECTED_RE = re.compile(r"^\[\s*(?P<id>\d+)\] local \S+ port \d+ connected to ")
_ACCEPTED_RE = re.compile(r"^Accepted connection from (?P<host>\S+?),? port \d+")
_REVERSE_RE = re.compile(r"^Reverse mode, remote host \S+ is sending")
# iperf_err() and iperf_errexit() (src/iperf_error.c) print every failure as "iperf3: ...":
# "error - ...", "interrupt - ...", a server's "the client has terminated".
_ERROR_RE = re.compile(r"^(?:iperf3: \S|iperf: (?:error|interrupt)\b).*", re.IGNORECASE)
_WARNING_RE = re.compile(r"^warning: ", re.IGNORECASE)
# What every run prints besides its figures (src/iperf_locale.c): headers, separators, the
# server's banner, verbose-mode lines; read past without being listed as skipped.
_KNOWN_RE = re.compile(
    r"^(?:\[ ID\]|- - -|-{10,}|iperf Done\.|Server listening on |Time: |Cookie: |TCP MSS: |"
    r"Starting Test: |Test Complete\. |CPU Utilization: |Using TCP Autotuning|"
    r"Finished omit period|\[\s*(?:\d+|SUM)\]\s+\((?:sender|receiver) statistics not available\)|"
    r"\[\s*(?:\d+|SUM)\](?:\[[TR]X-[CS]\])?\s+[\d.]+-\s*[\d.]+ sec\s+\d+ datagrams received out-of-order|"
    r"\[\s*(?:\d+|SUM)\] Sent \d+ datagrams|(?:snd|rcv)_tcp_congestion )"
)
# The direction a [TX-C]-style tag names: the client's transmit is the server's receive.
_TAG_DIRECTION = {
    "TX-C": CLIENT_TO_SERVER,
    "RX-S": CLIENT_TO_SERVER,
    "RX-C": SERVER_TO_CLIENT,
    "TX-S": SERVER_TO_CLIENT,
}
_BYTES = {"": 1, "K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40}
_BITS = {"": 1, "K": 10**3, "M": 10**6, "G": 10**9, "T": 10**12}


@dataclass
class _Summary:
    id: str
    start: float
    end: float
    bytes: int
    bps: float
    retransmits: int | None
    jitter_ms: float | None
    lost_percent: float | None
    lost_packets: int | None = None
    packets: int | None = None


def _summary(match: re.Match[str]) -> _Summary:
    rest = match.group("rest")
    udp = _UDP_REST_RE.search(rest)
    retr = None if udp else _RETR_RE.match(rest)
    return _Summary(
        id=match.group("id"),
        start=float(match.group("start")),
        end=float(match.group("end")),
        bytes=round(float(match.group("amount")) * _BYTES[match.group("amount_unit")]),
        bps=float(match.group("rate")) * _BITS[match.group("rate_unit")],
        retransmits=int(retr.group("retr")) if retr else None,
        jitter_ms=float(udp.group("jitter")) if udp else None,
        lost_percent=float(udp.group("pct")) if udp else None,
        lost_packets=int(udp.group("lost")) if udp else None,
        packets=int(udp.group("total")) if udp else None,
    )


@dataclass
class _TextFlow:
    """One direction's lines in text output: its summaries by (id, role) and intervals by id."""

    summaries: dict[tuple[str, str], _Summary]
    intervals: dict[str, list[_Summary]]


@dataclass(frozen=True)
class _FlowFigures:
    flow: Iperf3Flow
    sender: _Summary | None
    received: _Summary | None
    intervals: tuple[Iperf3Interval, ...]


def _text_figures(
    direction: str, lines: _TextFlow, connected: list[int], is_udp: bool
) -> _FlowFigures:
    summaries = lines.summaries
    stream_ids = sorted({int(key[0]) for key in summaries if key[0] != "SUM"} | set(connected))
    streams = tuple(
        Iperf3Stream(
            stream_id=stream_id,
            sent_bps=_field(summaries.get((str(stream_id), "sender")), "bps"),
            received_bps=_field(summaries.get((str(stream_id), "receiver")), "bps"),
            sent_bytes=_int_field(summaries.get((str(stream_id), "sender"))),
            received_bytes=_int_field(summaries.get((str(stream_id), "receiver"))),
            retransmits=(summaries.get((str(stream_id), "sender")) or _EMPTY).retransmits,
        )
        for stream_id in stream_ids
    )
    total_key = (
        "SUM"
        if any(key[0] == "SUM" for key in summaries)
        else (str(stream_ids[0]) if stream_ids else "")
    )
    sender = summaries.get((total_key, "sender"))
    receiver = summaries.get((total_key, "receiver"))
    if sender is None and receiver is None:
        raise UnrecognizedOutput(
            TOOL, "no total sender/receiver summary line (several streams but no [SUM])"
        )
    # A TCP server-side capture has only receiver lines; the other figure is then the same
    # transfer.  UDP loses datagrams, so its receiver's side is never the sender's copied.
    sent = sender or receiver
    received = receiver if is_udp else (receiver or sender)
    assert sent is not None
    if not is_udp and sender and receiver and sender.bytes > 0 and receiver.bytes == 0:
        # iperf3 3.16+ interrupted (SIGINT) prints the summary before the server's figures
        # arrive, with 0.00 Bytes received, and exits 0: the test never finished.
        raise UnrecognizedOutput(
            TOOL,
            f"the receiver's summary reports 0 bytes of the {sender.bytes} sent ({direction}): "
            "the test was cut short (client interrupted?) before the server sent its figures",
        )
    sum_intervals = (
        lines.intervals.get("SUM")
        or (lines.intervals.get(total_key) if len(stream_ids) == 1 else None)
        or []
    )
    flow = Iperf3Flow(
        direction=direction,
        streams=streams,
        sent_bps=sent.bps,
        received_bps=received.bps if received else None,
        sent_bytes=sent.bytes,
        received_bytes=received.bytes if received else None,
        retransmits=sender.retransmits if sender else None,
        duration_s=sent.end - sent.start,
        received_duration_s=received.end - received.start if received else None,
    )
    return _FlowFigures(
        flow, sender, received, tuple(Iperf3Interval(i.start, i.end, i.bps) for i in sum_intervals)
    )


def parse_text(text: str) -> Iperf3Result:
    """Parse iperf3's human-readable output (``Bitrate``/``Retr``/``Cwnd`` columns), client or server.

    Totals come from the ``sender``/``receiver`` summary lines (``[SUM]`` when there are
    several streams; ``[SUM][TX-C]`` and ``[SUM][RX-C]`` for each direction of ``--bidir``).
    ``iperf3: error - ...`` raises :class:`ToolReportedError`.
    """
    if not isinstance(text, str):
        raise UnrecognizedOutput(TOOL, f"expected text, got {type(text).__name__}")
    remote: str | None = None
    side: str | None = None
    reverse = False
    connected: list[int] = []
    flows: dict[str | None, _TextFlow] = {}
    errors: list[str] = []
    warnings: list[str] = []
    skipped = SkippedLines()
    udp = False
    for raw in text.splitlines():
        line = raw.strip()
        if not line:
            continue
        # Most lines are report lines ("[  5] ..."): try them first, the rest only when not one.
        match = _LINE_RE.match(line) if line[0] == "[" else None
        if match is None:
            if error := _ERROR_RE.match(line):
                errors.append(error.group(0))
            elif _WARNING_RE.match(line):
                warnings.append(line)
            elif connection := _CONNECTED_RE.match(line):
                connected.append(int(connection.group("id")))
            elif connecting := _CONNECTING_RE.match(line):
                remote = remote or connecting.group("host")
                side = side or "client"
            elif accepted := _ACCEPTED_RE.match(line):
                remote = remote or accepted.group("host")
                side = side or "server"
            elif _REVERSE_RE.match(line):
                reverse = True
            elif not _KNOWN_RE.match(line):
                skipped.add(line)
            elif "Jitter" in line and "Lost/Total" in line:
                udp = True
            continue
        summary = _summary(match)
        tag = match.group("tag")
        lines = flows.setdefault(_TAG_DIRECTION[tag] if tag else None, _TextFlow({}, {}))
        role = match.group("role")
        if role:
            lines.summaries[(summary.id, role)] = summary
        elif "(omitted)" not in match.group("rest"):  # -O warm-up seconds are not measured
            lines.intervals.setdefault(summary.id, []).append(summary)
    if errors:
        raise ToolReportedError(TOOL, "; ".join(errors))
    if not any(lines.summaries for lines in flows.values()):
        if any(lines.intervals for lines in flows.values()):
            raise UnrecognizedOutput(
                TOOL, "interval lines but no sender/receiver summary (run cut short?)"
            )
        raise UnrecognizedOutput(TOOL, "no iperf3 '[ ID] ... sec ... bits/sec' lines found")

    is_udp = udp or any(
        s.jitter_ms is not None for lines in flows.values() for s in lines.summaries.values()
    )
    bidir = None not in flows
    if bidir:
        forward = CLIENT_TO_SERVER
        own = _text_figures(
            CLIENT_TO_SERVER, flows.get(CLIENT_TO_SERVER) or _TextFlow({}, {}), [], is_udp
        )
        other = flows.get(SERVER_TO_CLIENT)
        reverse_flow = _text_figures(SERVER_TO_CLIENT, other, [], is_udp).flow if other else None
    else:
        untagged = flows[None]
        roles = {key[1] for key in untagged.summaries}
        # A client names -R ("Reverse mode"); a server that only sent (only sender lines) ran one.
        server_sent = side == "server" and roles == {"sender"}
        forward = SERVER_TO_CLIENT if reverse or server_sent else CLIENT_TO_SERVER
        own = _text_figures(forward, untagged, connected, is_udp)
        reverse_flow = None
    flow, received = own.flow, own.received
    return Iperf3Result(
        format="text",
        version=None,
        protocol="UDP" if is_udp else "TCP",
        num_streams=len(flow.streams),
        duration_s=flow.duration_s,
        remote_host=remote,
        reverse=reverse if side == "client" else None,
        streams=flow.streams,
        sent_bps=flow.sent_bps or 0.0,
        received_bps=flow.received_bps,
        sent_bytes=flow.sent_bytes,
        received_bytes=flow.received_bytes,
        retransmits=flow.retransmits,
        cpu_host_total_percent=None,
        cpu_remote_total_percent=None,
        jitter_ms=received.jitter_ms if received else None,
        lost_percent=received.lost_percent if received else None,
        intervals=own.intervals,
        received_duration_s=flow.received_duration_s,
        lost_packets=received.lost_packets if received else None,
        packets=received.packets if received else None,
        direction=forward,
        side=side,
        bidir=bidir,
        bidir_reverse=reverse_flow,
        warnings=tuple(warnings),
        skipped=skipped.lines,
        skipped_count=skipped.count,
    )


_EMPTY = _Summary("", 0.0, 0.0, 0, 0.0, None, None, None)


def _field(summary: _Summary | None, name: str) -> float | None:
    return None if summary is None else float(getattr(summary, name))


def _int_field(summary: _Summary | None) -> int | None:
    return None if summary is None else summary.bytes


@register(
    TOOL,
    "iperf3 output (JSON from -J or --json-stream, or text; --bidir, -R, server side): sent/received bit/s by direction",
    corpus=("iperf3",),
)
def parse(text: str) -> Iperf3Result:
    """Parse iperf3 client output, JSON or text, whichever it is (JSON when it holds an object)."""
    if not isinstance(text, str):
        raise UnrecognizedOutput(TOOL, f"expected text, got {type(text).__name__}")
    if _looks_like_json(text):
        return parse_json(text)
    return parse_text(text)


def _looks_like_json(text: str) -> bool:
    # "^C{" and similar: a JSON report may follow a little terminal noise on its first line,
    # or stderr's "warning: ..." lines when the two were captured together.  Only the first
    # lines are looked at: splitting a whole report into lines would cost more than reading it.
    position = 0
    while position < len(text):
        end = text.find("\n", position)
        end = len(text) if end < 0 else end
        line = text[position:end].strip()
        position = end + 1
        if not line or _WARNING_RE.match(line) or _ERROR_RE.match(line):
            continue
        return line.startswith("{") or ("{" in line and len(line.split("{", 1)[0]) <= 4)
    return False
