"""The kernel log as ``dmesg`` or ``journalctl -k`` prints it, and the events read from it.

Every line format these tools print by default or with a time option is read, each with the
time it carries:

- ``dmesg``: ``[ 1843.308145] message`` (seconds since boot, no date);
- ``dmesg --time-format iso``: ``2026-12-02T23:32:31,219741+00:00 message``;
- ``dmesg -T`` / ``--ctime``: ``[Fri Aug 30 11:43:09 2024] message`` (local time, no zone);
- ``dmesg -x``: any of these after ``kern  :info  : `` (facility and level);
- ``journalctl -k``: ``Feb 14 05:03:41 host kernel: message`` (no year: no date is taken);
- ``journalctl -k -o short-iso`` (and ``short-iso-precise``):
  ``2026-09-08T01:00:00+0000 host kernel: message``.

A journal line of another identifier than ``kernel`` (``systemd[1]: ...``, in a log that was not
read with ``-k``) is not the kernel's and is left out; a ``dmesg`` continuation line (indented,
no time: a message printed in several lines) belongs to the line before it.

From those lines, pure functions read what the health checks judge:

- :func:`xid_events`: NVIDIA Xid reports, ``NVRM: Xid (PCI:0000:3b:00): 79, pid=..., GPU has
  fallen off the bus.`` (NVIDIA's Xid catalogue), and the driver's own "has fallen off the bus"
  notice, which newer drivers print without an Xid line (read as Xid 79, as leptonai/gpud and
  NVIDIA/NVSentinel do);
- :func:`link_events`: ports going down: mlx5's ``mlx5_core 0000:ab:00.0 mlx5_5: Port: 1 Link
  DOWN`` (an InfiniBand port's state), a netdev's ``enp59s0f0np0: Link down`` / ``NIC Link is
  Down``, and ``ib0: Lost carrier`` (what azurehpc-health-checks greps for link flaps).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone

from pytest_fabric.parsers._textscan import split_lines
from pytest_fabric.parsers.base import SkippedLines, ToolReportedError, UnrecognizedOutput, register

__all__ = [
    "KernelLine",
    "KernelLog",
    "LinkEvent",
    "XidEvent",
    "gpu_bus_id",
    "link_events",
    "parse_kernel_log",
    "since",
    "unreadable",
    "window_start",
    "xid_events",
]

TOOL = "kernel-log"

_MONTHS = {m: i for i, m in enumerate(("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct",
                                       "Nov", "Dec"), start=1)}
# dmesg -x: "kern  :info  : " (facility, level, both padded)
_DECODED = re.compile(r"^[a-z]+\s*:[a-z]+\s*: ")
_RAW = re.compile(r"^\[\s*(?P<uptime>[0-9]+\.[0-9]+)\]\s?(?P<message>.*)$")
_CTIME = re.compile(r"^\[(?:[A-Z][a-z]{2}) (?P<mon>[A-Z][a-z]{2})\s+(?P<day>[0-9]{1,2}) "
                    r"(?P<time>[0-9]{2}:[0-9]{2}:[0-9]{2}) (?P<year>[0-9]{4})\]\s?(?P<message>.*)$")
_ISO_TIME = (r"(?P<iso>[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(?:[,.][0-9]+)?"
             r"(?:[+-][0-9]{2}:?[0-9]{2}|Z))")
# dmesg writes its fraction after a comma (``23:32:31,219741+00:00``), journalctl after a dot or not at all
_DMESG_ISO = re.compile(r"^(?P<iso>[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2},[0-9]+(?:[+-][0-9]{2}:?[0-9]{2}|Z))"
                        r" (?P<message>.*)$")
# journalctl: "<time> <host> <identifier>[pid]: message"
_JOURNAL_ISO = re.compile(rf"^{_ISO_TIME} (?P<host>\S+) (?P<ident>[^\s:\[]+)(?:\[[0-9]+\])?: ?(?P<message>.*)$")
_JOURNAL_SHORT = re.compile(r"^(?P<mon>[A-Z][a-z]{2}) (?P<day>[ 0-9][0-9]) (?P<time>[0-9]{2}:[0-9]{2}:[0-9]{2}) "
                            r"(?P<host>\S+) (?P<ident>[^\s:\[]+)(?:\[[0-9]+\])?: ?(?P<message>.*)$")
# journalctl's own lines: "-- Boot 3f2c... --", "-- No entries --", "-- Logs begin at ... --"
_JOURNAL_META = re.compile(r"^-- .* --$")
_CONTINUATION = re.compile(r"^\s+\S")


@dataclass(frozen=True)
class KernelLine:
    """One kernel message (its continuation lines joined with a newline), where it was, and when."""

    number: int  # 1-based line of the output where it starts
    message: str
    text: str  # the line(s) as printed
    #: when, where the line says it in full (ISO, ctime, short-iso); None for seconds since boot or
    #: a journal line without a year
    at: datetime | None = None
    uptime_s: float | None = None  # dmesg's plain ``[seconds]``


@dataclass(frozen=True)
class KernelLog:
    """The kernel lines of one ``dmesg`` or ``journalctl -k`` output."""

    format: str  # dmesg | dmesg-iso | dmesg-ctime | journal | journal-iso | empty
    lines: tuple[KernelLine, ...]
    skipped: tuple[str, ...] = ()  # lines of other programs (a journal read without -k) or unknown shape
    skipped_count: int = 0


@dataclass(frozen=True)
class XidEvent:
    """One NVIDIA Xid report: the GPU (``0000:3b:00``, lower case, as NVRM names it), its code, the line."""

    bus_id: str
    code: int
    detail: str  # what follows the code (``pid=..., name=..., GPU has fallen off the bus.``)
    line: KernelLine
    #: not an Xid line: the driver's "has fallen off the bus" notice, read as Xid 79
    inferred: bool = False


@dataclass(frozen=True)
class LinkEvent:
    """A port or netdev going down (or coming back), as the kernel logged it."""

    device: str  # the RDMA device (``mlx5_5``) or the netdev (``ib0``, ``enp59s0f0np0``)
    port: int | None  # the RDMA port where the line names one (``Port: 1``)
    state: str  # down | up | init | armed | active | ... (lower case)
    line: KernelLine

    @property
    def down(self) -> bool:
        return self.state == "down"


def _iso(text: str) -> datetime:
    text = text.replace(",", ".")
    if text.endswith("Z"):
        text = text[:-1] + "+00:00"
    elif re.search(r"[+-][0-9]{4}$", text):  # journalctl's +0000
        text = text[:-5] + text[-5:-2] + ":" + text[-2:]
    return datetime.fromisoformat(text)


def _ctime(match: re.Match[str]) -> datetime:
    hour, minute, second = (int(x) for x in match.group("time").split(":"))
    # dmesg -T prints local time without a zone: kept naive, never compared with an aware time
    return datetime(int(match.group("year")), _MONTHS[match.group("mon")], int(match.group("day")), hour, minute,
                    second)


def _read(line: str) -> tuple[str, str, datetime | None, float | None] | None:
    """(format, message, time, uptime) of one line, or None when it is no kernel line (or a time
    that is no date: month 13, a 31st of February)."""
    try:
        return _read_dated(line)
    except (ValueError, KeyError, OverflowError):
        return None


def _read_dated(line: str) -> tuple[str, str, datetime | None, float | None] | None:
    decoded = _DECODED.match(line)
    body = line[decoded.end():] if decoded else line
    if m := _RAW.match(body):
        return "dmesg", m.group("message"), None, float(m.group("uptime"))
    if m := _CTIME.match(body):
        return "dmesg-ctime", m.group("message"), _ctime(m), None
    if m := _DMESG_ISO.match(body):
        return "dmesg-iso", m.group("message"), _iso(m.group("iso")), None
    if m := _JOURNAL_ISO.match(body):
        if m.group("ident") != "kernel":
            return None
        return "journal-iso", m.group("message"), _iso(m.group("iso")), None
    if m := _JOURNAL_SHORT.match(body):
        if m.group("ident") != "kernel":
            return None
        return "journal", m.group("message"), None, None
    return None


def unreadable(text: str) -> str | None:
    """Why the output is no kernel log, in the tool's words, when it says so (dmesg_restrict, a journal
    the user may not read); None otherwise."""
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith("dmesg: ") and ("failed" in stripped or "not permitted" in stripped.lower()):
            return stripped
        if "No journal files were" in stripped or "insufficient permissions" in stripped:
            return stripped
    return None


@register(TOOL, "dmesg / journalctl -k output: kernel lines with their time; Xid and link-down events",
)
def parse_kernel_log(text: str) -> KernelLog:
    """The kernel lines of ``text``; an empty journal (``-- No entries --``) is an empty log, a refusal
    to read (``dmesg: read kernel buffer failed``) a :class:`ToolReportedError`."""
    refused = unreadable(text)
    lines = split_lines(TOOL, text) if text.strip() else []
    if refused and not any(_read(line) for line in lines):
        raise ToolReportedError(TOOL, refused)
    found: list[KernelLine] = []
    formats: dict[str, int] = {}
    skipped = SkippedLines()
    meta = 0
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        if _JOURNAL_META.match(line.strip()):
            meta += 1
            continue
        read = _read(line)
        if read is None:
            if _CONTINUATION.match(line) and found and found[-1].number + found[-1].text.count("\n") == number - 1:
                last = found[-1]
                found[-1] = KernelLine(last.number, f"{last.message}\n{line.strip()}", f"{last.text}\n{line}",
                                       last.at, last.uptime_s)
            else:
                skipped.add(line)
            continue
        kind, message, at, uptime = read
        formats[kind] = formats.get(kind, 0) + 1
        found.append(KernelLine(number, message, line, at, uptime))
    if not found and not meta and skipped.count:
        raise UnrecognizedOutput(TOOL, f"no line in a dmesg or journalctl format; the first is {skipped.lines[0][:80]!r}")
    kind = max(formats, key=lambda k: formats[k]) if formats else "empty"
    return KernelLog(kind, tuple(found), skipped.lines, skipped.count)


# "NVRM: Xid (PCI:0000:3b:00): 79, pid=..." (older drivers: "NVRM: Xid (0000:03:00): 14, Channel ...")
_XID = re.compile(r"NVRM: Xid \((?:PCI:)?(?P<bus>[0-9a-fA-F]{4,8}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2})(?:\.[0-7])?\): "
                  r"(?P<code>[0-9]+)(?:,\s*(?P<detail>.*))?$")
_FALLEN_GPU = re.compile(r"NVRM: The NVIDIA GPU (?P<bus>[0-9a-fA-F]{4,8}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2})(?:\.[0-7])?")


def gpu_bus_id(bus_id: str) -> str:
    """A GPU's PCI address as NVRM's Xid lines write it: ``0000:3b:00`` from nvidia-smi's
    ``00000000:3B:00.0``, lspci's ``3b:00.0`` or NVRM's own ``PCI:0000:3b:00``."""
    text = bus_id.strip().lower().removeprefix("pci:")
    text = re.sub(r"\.[0-7]$", "", text)
    parts = text.split(":")
    if len(parts) == 2:
        parts = ["0000", *parts]
    domain, bus, device = parts[-3:]
    return f"{int(domain, 16):04x}:{bus}:{device}"


def xid_events(log: KernelLog) -> list[XidEvent]:
    """Every Xid report of the log, in order, and each "fallen off the bus" notice without one."""
    events: list[XidEvent] = []
    for line in log.lines:
        for part in line.message.splitlines() or [line.message]:
            if m := _XID.search(part):
                events.append(XidEvent(gpu_bus_id(m.group("bus")), int(m.group("code")),
                                       (m.group("detail") or "").strip(), line))
    for index, line in enumerate(log.lines):
        fallen = _FALLEN_GPU.search(line.message)
        if not fallen:
            continue
        # dmesg joins the notice's three lines; journalctl prints each as an entry of its own
        following = "\n".join(item.message for item in log.lines[index:index + 3])
        bus = gpu_bus_id(fallen.group("bus"))
        already = any(e.bus_id == bus and e.code == 79 for e in events)
        if "fallen off the bus" in following and not already:
            events.append(XidEvent(bus, 79, "GPU has fallen off the bus (the driver's notice, no Xid line)", line,
                                   inferred=True))
    return events


# mlx5: "mlx5_core 0000:ab:00.0 mlx5_5: Port: 1 Link DOWN" (also INIT, ARM, ACTIVE)
_IB_PORT = re.compile(r"\b(?P<device>[a-z][a-z0-9_]*_[0-9]+): Port: (?P<port>[0-9]+) Link (?P<state>[A-Z_]+)\b")
# netdevs: "mlx5_core 0000:3b:00.0 enp59s0f0np0: Link down", "igc ... eth5: NIC Link is Down"
_NETDEV = re.compile(r"(?:^|\s)(?P<device>[A-Za-z][A-Za-z0-9_.-]*): (?:NIC )?Link (?:is )?(?P<state>[Dd]own|[Uu]p)\b")
_CARRIER = re.compile(r"(?:^|\s)(?P<device>[A-Za-z][A-Za-z0-9_.-]*): (?P<what>Lost|Gained) carrier\b")


def link_events(log: KernelLog) -> list[LinkEvent]:
    """Port and netdev state changes of the log, in order (``down`` among them is what counts)."""
    events: list[LinkEvent] = []
    for line in log.lines:
        if m := _IB_PORT.search(line.message):
            events.append(LinkEvent(m.group("device"), int(m.group("port")), m.group("state").lower(), line))
        elif m := _NETDEV.search(line.message):
            events.append(LinkEvent(m.group("device"), None, m.group("state").lower(), line))
        elif m := _CARRIER.search(line.message):
            events.append(LinkEvent(m.group("device"), None, "down" if m.group("what") == "Lost" else "up", line))
    return events


def since(log: KernelLog, start: datetime, *, uptime_start: float | None = None) -> tuple[KernelLog, int]:
    """The log of the lines at or after ``start`` (aware), and how many carry no time to compare (kept: a line
    that cannot be placed outside the window counts).  ``uptime_start``: the window's start in
    seconds since boot, for dmesg's plain ``[seconds]`` lines."""
    kept: list[KernelLine] = []
    undated = 0
    for line in log.lines:
        if line.at is not None and line.at.tzinfo is not None:
            if line.at >= start:
                kept.append(line)
        elif line.uptime_s is not None and uptime_start is not None:
            if line.uptime_s >= uptime_start:
                kept.append(line)
        else:
            undated += 1
            kept.append(line)
    return KernelLog(log.format, tuple(kept), log.skipped, log.skipped_count), undated


def window_start(now_epoch: float, window_s: float) -> datetime:
    """The start of a window of ``window_s`` seconds ending at the node's ``now_epoch`` (``date +%s``)."""
    return datetime.fromtimestamp(now_epoch, tz=timezone.utc) - timedelta(seconds=window_s)
