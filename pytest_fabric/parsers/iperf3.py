"""iperf3 client output, JSON (``-J``) or text: text -> :class:`Iperf3Result`.

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
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from pytest_fabric.parsers._textscan import json_document
from pytest_fabric.parsers.base import ParseError, ToolReportedError, UnrecognizedOutput, register

__all__ = ["Iperf3Interval", "Iperf3Result", "Iperf3Stream", "parse", "parse_json", "parse_text"]

TOOL = "iperf3"


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


def _load_json(text: str) -> dict[str, Any]:
    # Captures can carry a terminal's "^C" or other noise before the document.
    document = json_document(TOOL, text)
    if not isinstance(document, dict):
        raise UnrecognizedOutput(TOOL, f"JSON is a {type(document).__name__}, not an iperf3 report object")
    return document


def parse_json(text: str) -> Iperf3Result:
    """Parse ``iperf3 -c HOST -J`` output (iperf3 3.0.11 and later).

    Raises :class:`ToolReportedError` when the document has an ``"error"`` key, quoting it.
    """
    if not isinstance(text, str):
        raise UnrecognizedOutput(TOOL, f"expected text, got {type(text).__name__}")
    document = _load_json(text)
    error = document.get("error")
    if error:
        raise ToolReportedError(TOOL, f"iperf3 reported an error: {error}")
    if "start" not in document and "end" not in document:
        raise UnrecognizedOutput(TOOL, "JSON has neither 'start' nor 'end': not an iperf3 report")
    start = _dict(document.get("start"), "start")
    end = _dict(document.get("end"), "end")
    test_start = _dict(start.get("test_start"), "start.test_start")
    protocol = str(test_start.get("protocol") or "TCP").upper()

    sum_sent = _dict(end.get("sum_sent"), "end.sum_sent")
    sum_received = _dict(end.get("sum_received"), "end.sum_received")
    udp_sum = _dict(end.get("sum"), "end.sum")
    if not sum_sent and not sum_received and not udp_sum:
        raise UnrecognizedOutput(TOOL, "JSON has no end.sum_sent / end.sum_received / end.sum (run cut short?)")
    # UDP before 3.11 has only end.sum: the sender's bytes and rate with the receiver's jitter and
    # loss.  It stands in for the sender's side, never for the receiver's (TCP always has both).
    sent_source = sum_sent or udp_sum
    received_source = sum_received
    loss_source = sum_received or udp_sum

    streams: list[Iperf3Stream] = []
    for index, entry in enumerate(_list(end.get("streams"), "end.streams")):
        entry = _dict(entry, f"end.streams[{index}]")
        sender = _dict(entry.get("sender"), f"end.streams[{index}].sender")
        receiver = _dict(entry.get("receiver"), f"end.streams[{index}].receiver")
        udp = _dict(entry.get("udp"), f"end.streams[{index}].udp")
        socket = sender.get("socket", receiver.get("socket", udp.get("socket", index)))
        streams.append(
            Iperf3Stream(
                stream_id=int(_number(socket, f"end.streams[{index}] socket")),
                # A UDP stream's "udp" entry is the sender's view (bytes sent), like end.sum.
                sent_bps=_optional_number((sender or udp).get("bits_per_second"), "sender bits_per_second"),
                received_bps=_optional_number(receiver.get("bits_per_second"), "receiver bits_per_second"),
                sent_bytes=_optional_int((sender or udp).get("bytes"), "sender bytes"),
                received_bytes=_optional_int(receiver.get("bytes"), "receiver bytes"),
                retransmits=_optional_int(sender.get("retransmits"), "sender retransmits"),
            )
        )

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

    connecting = _dict(start.get("connecting_to"), "start.connecting_to")
    connected = _list(start.get("connected"), "start.connected")
    remote = connecting.get("host")
    if remote is None and connected and isinstance(connected[0], dict):
        remote = connected[0].get("remote_host")
    cpu = _dict(end.get("cpu_utilization_percent"), "end.cpu_utilization_percent")
    version = start.get("version")
    num_streams = test_start.get("num_streams")
    reverse = test_start.get("reverse")
    duration = _optional_number(sent_source.get("seconds"), "end sent seconds")
    if duration is None:  # iperf3 too old to write the seconds a side took
        duration = _optional_number(test_start.get("duration"), "duration")
    is_udp = protocol == "UDP"
    return Iperf3Result(
        format="json",
        version=str(version).removeprefix("iperf ").strip() if version is not None else None,
        protocol=protocol,
        num_streams=int(_number(num_streams, "num_streams")) if num_streams is not None else len(streams),
        duration_s=duration,
        remote_host=None if remote is None else str(remote),
        reverse=None if reverse is None else bool(reverse),
        streams=tuple(streams),
        sent_bps=_number(sent_source.get("bits_per_second"), "end sent bits_per_second"),
        received_bps=(
            _number(received_source.get("bits_per_second"), "end received bits_per_second") if received_source else None
        ),
        sent_bytes=_optional_int(sent_source.get("bytes"), "end sent bytes"),
        received_bytes=_optional_int(received_source.get("bytes"), "end received bytes"),
        retransmits=_optional_int(sum_sent.get("retransmits"), "end.sum_sent.retransmits"),
        cpu_host_total_percent=_optional_number(cpu.get("host_total"), "cpu host_total"),
        cpu_remote_total_percent=_optional_number(cpu.get("remote_total"), "cpu remote_total"),
        jitter_ms=_optional_number(loss_source.get("jitter_ms"), "jitter_ms") if is_udp else None,
        lost_percent=_optional_number(loss_source.get("lost_percent"), "lost_percent") if is_udp else None,
        intervals=tuple(intervals),
        received_duration_s=_optional_number(received_source.get("seconds"), "end received seconds"),
        lost_packets=_optional_int(loss_source.get("lost_packets"), "lost_packets") if is_udp else None,
        packets=_optional_int(loss_source.get("packets"), "packets") if is_udp else None,
    )


# --- text ---------------------------------------------------------------------------------------

_LINE_RE = re.compile(
    r"^\[\s*(?P<id>\d+|SUM)\]\s+(?P<start>\d+(?:\.\d+)?)-\s*(?P<end>\d+(?:\.\d+)?)\s+sec\s+"
    r"(?P<amount>\d+(?:\.\d+)?)\s+(?P<amount_unit>[KMGT]?)Bytes\s+"
    r"(?P<rate>\d+(?:\.\d+)?)\s+(?P<rate_unit>[KMGT]?)bits/sec"
    r"(?P<rest>.*?)\s*(?P<role>sender|receiver)?\s*$"
)
_UDP_REST_RE = re.compile(r"(?P<jitter>\d+(?:\.\d+)?)\s+ms\s+(?P<lost>\d+)/\s*(?P<total>\d+)\s+\((?P<pct>\d+(?:\.\d+)?(?:e[-+]?\d+)?)%\)")
_RETR_RE = re.compile(r"^\s*(?P<retr>\d+)\b")
_CONNECTING_RE = re.compile(r"^Connecting to host (?P<host>\S+?),? port (?P<port>\d+)")
_CONNECTED_RE = re.compile(r"^\[\s*(?P<id>\d+)\] local \S+ port \d+ connected to ")
_ERROR_RE = re.compile(r"^iperf3?: (?:error|interrupt)\b.*", re.IGNORECASE)
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


def parse_text(text: str) -> Iperf3Result:
    """Parse iperf3's human-readable client output (``Bitrate``/``Retr``/``Cwnd`` columns).

    Totals come from the ``sender``/``receiver`` summary lines (``[SUM]`` when there are
    several streams).  ``iperf3: error - ...`` raises :class:`ToolReportedError`.
    """
    if not isinstance(text, str):
        raise UnrecognizedOutput(TOOL, f"expected text, got {type(text).__name__}")
    remote: str | None = None
    connected: list[int] = []
    intervals: dict[str, list[_Summary]] = {}
    summaries: dict[tuple[str, str], _Summary] = {}
    errors: list[str] = []
    udp = False
    for raw in text.splitlines():
        line = raw.strip()
        if not line:
            continue
        if error := _ERROR_RE.match(line):
            errors.append(error.group(0))
            continue
        if "Jitter" in line and "Lost/Total" in line:
            udp = True
        if connecting := _CONNECTING_RE.match(line):
            remote = remote or connecting.group("host")
            continue
        if connection := _CONNECTED_RE.match(line):
            connected.append(int(connection.group("id")))
            continue
        match = _LINE_RE.match(line)
        if not match:
            continue
        summary = _summary(match)
        role = match.group("role")
        if role:
            summaries[(summary.id, role)] = summary
        else:
            intervals.setdefault(summary.id, []).append(summary)
    if errors:
        raise ToolReportedError(TOOL, "; ".join(errors))
    if not summaries:
        if intervals:
            raise UnrecognizedOutput(TOOL, "interval lines but no sender/receiver summary (run cut short?)")
        raise UnrecognizedOutput(TOOL, "no iperf3 '[ ID] ... sec ... bits/sec' lines found")

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
    total_key = "SUM" if any(key[0] == "SUM" for key in summaries) else (str(stream_ids[0]) if stream_ids else "")
    sender = summaries.get((total_key, "sender"))
    receiver = summaries.get((total_key, "receiver"))
    if sender is None and receiver is None:
        raise UnrecognizedOutput(TOOL, "no total sender/receiver summary line (several streams but no [SUM])")
    is_udp = udp or any(s.jitter_ms is not None for s in summaries.values())
    # A TCP server-side capture has only receiver lines; the other figure is then the same
    # transfer.  UDP loses datagrams, so its receiver's side is never the sender's copied.
    sent = sender or receiver
    received = receiver if is_udp else (receiver or sender)
    assert sent is not None
    sum_intervals = intervals.get("SUM") or (intervals.get(total_key) if len(stream_ids) == 1 else None) or []
    return Iperf3Result(
        format="text",
        version=None,
        protocol="UDP" if is_udp else "TCP",
        num_streams=len(stream_ids),
        duration_s=sent.end - sent.start,
        remote_host=remote,
        reverse=None,
        streams=streams,
        sent_bps=sent.bps,
        received_bps=received.bps if received else None,
        sent_bytes=sent.bytes,
        received_bytes=received.bytes if received else None,
        retransmits=sender.retransmits if sender else None,
        cpu_host_total_percent=None,
        cpu_remote_total_percent=None,
        jitter_ms=received.jitter_ms if received else None,
        lost_percent=received.lost_percent if received else None,
        intervals=tuple(Iperf3Interval(i.start, i.end, i.bps) for i in sum_intervals),
        received_duration_s=received.end - received.start if received else None,
        lost_packets=received.lost_packets if received else None,
        packets=received.packets if received else None,
    )


_EMPTY = _Summary("", 0.0, 0.0, 0, 0.0, None, None, None)


def _field(summary: _Summary | None, name: str) -> float | None:
    return None if summary is None else float(getattr(summary, name))


def _int_field(summary: _Summary | None) -> int | None:
    return None if summary is None else summary.bytes


@register(TOOL, "iperf3 client output (JSON from -J, or text): total sent/received bit/s", corpus=("iperf3",))
def parse(text: str) -> Iperf3Result:
    """Parse iperf3 client output, JSON or text, whichever it is (JSON when it holds an object)."""
    if not isinstance(text, str):
        raise UnrecognizedOutput(TOOL, f"expected text, got {type(text).__name__}")
    stripped = text.lstrip()
    # "^C{" and similar: a JSON report may follow a little terminal noise on its first line.
    first_line = stripped.split("\n", 1)[0]
    if stripped.startswith("{") or ("{" in first_line and len(first_line.split("{", 1)[0]) <= 4):
        return parse_json(text)
    return parse_text(text)
