"""perftest (``ib_write_bw``, ``ib_read_bw``, ``ib_send_bw``, ``ib_*_lat``): text -> typed result.

perftest prints a header block (``key : value`` pairs, two to a line), the
address exchange, then one table row per message size.  We read what real runs
print, not only what a clean run prints:

- server and client stdout captured together (the lines interleave, the header
  and the last row can appear twice);
- CUDA initialisation chatter before the header (``--use_cuda``);
- warnings anywhere, even inside the table (``Conflicting CPU frequency values
  detected``, ``Requested mtu is higher than active mtu``);
- duration mode (``-D``), where the peak is not measured and printed as 0.00;
- perftest 24.07 and later (24.x, 25.x): the unit renamed ``MiB/sec`` (the same
  2^20 bytes/s), banner lines such as ``Using Enhanced Reorder``, ``CQE Poll
  Batch``, ``Lock-free``, ``Disabling dynamic polling``, the per-port columns of
  ``--report-per-port`` and the ``#sl`` column of a QoS run.

Bandwidth is reported in Gb/s (10^9 bit/s) whatever the run printed: perftest's
``MB/sec`` (``MiB/sec`` from 24.07) is 2^20 bytes/s and its ``Gb/sec``
(``--report_gbits``) is 10^9 bit/s.  Both come from perftest's own ``print_report_bw``
(src/perftest_parameters.c since 24.x, src/perftest_resources.c before):
``format_factor = (report_fmt == MBS) ? 0x100000 : 125000000`` bytes per second.

A line the parser does not know (a new warning, a launcher's banner) is kept in
``skipped`` and the rest is read; so is a row with fewer values than the table has
columns (a line cut short).  A failure perftest reports (``Couldn't connect``,
``Completion with error``) still raises :class:`ToolReportedError`: a run that
failed measured nothing to judge.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from pytest_fabric.parsers.base import (
    ParseError,
    SkippedLines,
    ToolReportedError,
    UnrecognizedOutput,
    register,
)

__all__ = [
    "PerftestBandwidth",
    "PerftestBandwidthRow",
    "PerftestLatency",
    "PerftestLatencyRow",
    "parse_bandwidth",
    "parse_latency",
]

BW_TOOL = "perftest-bw"
LAT_TOOL = "perftest-lat"

# perftest's MB/sec is 2^20 bytes/s (format_factor 0x100000); as Gb/s that is
# 2^20 * 8 / 10^9.  Its Gb/sec is 125000000 bytes/s, already 10^9 bit/s.
_MIB_PER_S_IN_GBPS = 1048576 * 8 / 1e9

_TITLE_RE = re.compile(r"^\s*(?P<title>\S.*?\b(?:BW|Latency|Lat)\s+Test)\s*$", re.IGNORECASE)
_DASHES_RE = re.compile(r"^\s*-{10,}\s*$")
# One header pair: a key of letters and a few punctuation marks, a digit only straight
# after a letter ("GID index2"), so CUDA chatter such as "CUDA device 0: PCIe address
# is E1:00" is not taken for one.
_KEY = r"[A-Za-z][A-Za-z ._*/()-]*?(?:(?<=[A-Za-z])\d)?"
_PAIR = rf"{_KEY}\s*:\s*\S+"
_HEADER_LINE_RE = re.compile(rf"^\s*{_PAIR}(?:\s+{_PAIR})?\s*$")
_PAIR_RE = re.compile(rf"(?P<key>{_KEY})\s*:\s*(?P<value>\S+)")

# Table columns perftest prints, in any version we know; matched left to right on
# the line that starts with "#bytes".
_COLUMN_PATTERNS: tuple[tuple[str, str], ...] = (
    ("bytes", r"\#bytes"),
    ("sl", r"\#sl"),
    ("iterations", r"\#iterations"),
    ("bw_peak", r"BW\s+peak\[(?P<peak_unit>[^\]]+)\]"),
    ("bw_average", r"BW\s+average\[(?P<avg_unit>[^\]]+)\]"),
    ("msg_rate", r"MsgRate\[Mpps\]"),
    ("bw_port1", r"BW\s+Port1\[[^\]]+\]"),
    ("msg_rate_port1", r"MsgRate\s+Port1\[Mpps\]"),
    ("bw_port2", r"BW\s+Port2\[[^\]]+\]"),
    ("msg_rate_port2", r"MsgRate\s+Port2\[Mpps\]"),
    ("t_min", r"t_min\[usec\]"),
    ("t_max", r"t_max\[usec\]"),
    ("t_typical", r"t_typical\[usec\]"),
    ("t_avg", r"t_avg\[usec\]"),
    ("t_stdev", r"t_stdev\[usec\]"),
    ("p99_9", r"99\.9%\s+percentile\[usec\]"),
    ("p99", r"99%\s+percentile\[usec\]"),
    ("tps", r"tps\s+average"),
    ("cpu_util", r"CPU_Util\[%\]"),
)
_COLUMNS_RE = re.compile("|".join(f"(?P<{name}>{pattern})" for name, pattern in _COLUMN_PATTERNS))
_ROW_RE = re.compile(r"^\s*\d+\s+\d+(?:\s+[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)+\s*$")

_WARNING_RE = re.compile(
    r"warning|requested mtu is higher|changing to active mtu|conflicting cpu frequency|"
    r"doesn't supports?|not max",
    re.IGNORECASE,
)
# What perftest prints when it gives up: the client cannot reach the server, the
# device or QP cannot be set up, or a work completion comes back with an error (with
# the send/completion counts after it, src/perftest_resources.h NOTIFY_COMP_ERROR_*).
_ERROR_RE = re.compile(
    r"^\s*(?:couldn't|could not|can't|unable to|failed to|failed:|completion with error|"
    r"failed status|a completion with error|poll (?:send|recv) cq|no ib devices found|"
    r"did not detect devices|ib device \S+ not found|did not get message|[rs]cnt=\d|"
    r"ibv_\w+ failed|error[: ]|\S+: error)",
    re.IGNORECASE,
)
# Lines every run prints around its table that carry nothing to read: the address
# exchange, the server's wait, GPU buffer set-up and tear-down, 24.x's polling note,
# the timing lines some builds add.
_KNOWN_CHATTER_RE = re.compile(
    r"^(?:\*|local address:|remote address:|gid:|mgid:|waiting for client|please run the same command|"
    r"disabling dynamic polling|picking (?:device|gpu)|deallocating gpu buffer|destroying current cuda|"
    r"using sampled cpu speed|connected:|completed:|total run time|test with events|multicast runs|"
    r"post list requested|listing all|\[pid = |creating |making it |allocated gpu buffer|"
    r"(?:using|use) (?:cuda|rocm)|cuda|rocm)",
    re.IGNORECASE,
)
_CUDA_RE = re.compile(r"initializing CUDA|cuMemAlloc|CUDA Ctx|using CUDA|use_cuda", re.IGNORECASE)
_GPU_NAME_RE = re.compile(r"device name\s*=\s*\[(?P<name>[^\]]+)\]")


@dataclass(frozen=True)
class _PerftestRun:
    """What every perftest run states in its header (``None`` where the version did not print it)."""

    test_name: str
    """The title line, e.g. ``RDMA_Write BW Test``, ``Send Latency Test``."""
    device: str | None
    num_qps: int | None
    transport_type: str | None
    connection_type: str | None
    mtu_bytes: int | None
    link_type: str | None
    """``IB`` or ``Ethernet`` (RoCE)."""
    gid_index: int | None
    tos: int | None
    uses_cuda: bool
    """GPUDirect run (``--use_cuda``): seen from the CUDA set-up perftest prints."""
    cuda_device_name: str | None
    header: dict[str, str]
    """Every header pair as printed (first occurrence wins when a header repeats)."""
    warnings: tuple[str, ...]
    skipped: tuple[str, ...]
    """Lines the parser did not know, each once (the first 100): a newer version's additions."""
    skipped_count: int
    """How many lines were skipped in all, repeats included."""


@dataclass(frozen=True)
class PerftestBandwidthRow:
    """One message size of a bandwidth run."""

    size_bytes: int
    iterations: int
    bw_peak_gbps: float | None
    """``None`` when perftest did not measure the peak (duration mode prints 0.00)."""
    bw_average_gbps: float
    msg_rate_mpps: float | None
    sl: int | None = None
    """The service level of a QoS run's row (``#sl`` column); ``None`` elsewhere."""
    bw_port1_gbps: float | None = None
    """``--report-per-port`` on a dual-port run: port 1's share of the average (port 2 likewise)."""
    bw_port2_gbps: float | None = None
    msg_rate_port1_mpps: float | None = None
    msg_rate_port2_mpps: float | None = None
    cpu_util_percent: float | None = None
    """``--cpu_util``: the CPU use perftest measured."""


@dataclass(frozen=True)
class PerftestBandwidth(_PerftestRun):
    """A parsed ``ib_*_bw`` run: header fields and one row per message size, bandwidth in Gb/s."""

    rows: tuple[PerftestBandwidthRow, ...]
    reported_unit: str
    """The unit the run printed: ``MB/sec`` or ``MiB/sec`` (both 2^20 B/s) or ``Gb/sec`` (``--report_gbits``)."""
    duration_mode: bool
    """``-D``: iterations count what fitted in the time, the peak is not measured."""

    def row_at(self, size_bytes: int) -> PerftestBandwidthRow:
        """The row at exactly ``size_bytes``; a :class:`ParseError` lists the sizes present otherwise."""
        for row in self.rows:
            if row.size_bytes == size_bytes:
                return row
        raise ParseError(
            BW_TOOL, f"no row for {size_bytes} bytes; sizes present: {_sizes(self.rows)}"
        )

    @property
    def largest_row(self) -> PerftestBandwidthRow:
        """The row with the largest message size (what a single-size or ``-a`` run is judged on)."""
        return max(self.rows, key=lambda row: row.size_bytes)


@dataclass(frozen=True)
class PerftestLatencyRow:
    """One message size of a latency run, in microseconds; ``None`` where the version has no such column."""

    size_bytes: int
    iterations: int
    latency_min_us: float | None
    latency_max_us: float | None
    latency_typical_us: float | None
    latency_avg_us: float | None
    latency_stdev_us: float | None
    latency_p99_us: float | None
    latency_p99_9_us: float | None
    tps_average: float | None
    """Transactions per second, printed in duration mode (``-D``) only."""
    cpu_util_percent: float | None = None


@dataclass(frozen=True)
class PerftestLatency(_PerftestRun):
    """A parsed ``ib_*_lat`` run: header fields and one row per message size."""

    rows: tuple[PerftestLatencyRow, ...]

    def row_at(self, size_bytes: int) -> PerftestLatencyRow:
        """The row at exactly ``size_bytes``; a :class:`ParseError` lists the sizes present otherwise."""
        for row in self.rows:
            if row.size_bytes == size_bytes:
                return row
        raise ParseError(
            LAT_TOOL, f"no row for {size_bytes} bytes; sizes present: {_sizes(self.rows)}"
        )

    @property
    def smallest_row(self) -> PerftestLatencyRow:
        """The row with the smallest message size (the usual latency figure)."""
        return min(self.rows, key=lambda row: row.size_bytes)


def _sizes(rows: tuple[PerftestBandwidthRow, ...] | tuple[PerftestLatencyRow, ...]) -> str:
    return ", ".join(str(row.size_bytes) for row in rows) or "none"


@dataclass
class _Scan:
    """The parts of a perftest output, before they are typed."""

    title: str | None
    header: dict[str, str]
    columns: list[str]
    peak_unit: str | None
    avg_unit: str | None
    rows: list[tuple[int, list[str]]]  # (line number, tokens)
    warnings: list[str]
    errors: list[str]
    uses_cuda: bool
    cuda_device_name: str | None
    skipped: SkippedLines


def _scan(tool: str, text: str) -> _Scan:
    if not isinstance(text, str):
        raise UnrecognizedOutput(tool, f"expected text, got {type(text).__name__}")
    scan = _Scan(None, {}, [], None, None, [], [], [], False, None, SkippedLines())
    seen_rows: set[tuple[str, ...]] = set()
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or _DASHES_RE.match(line) or set(line) <= {"*"}:
            continue
        if _CUDA_RE.search(line):
            scan.uses_cuda = True
        gpu = _GPU_NAME_RE.search(line)
        if gpu and scan.cuda_device_name is None:
            scan.cuda_device_name = gpu.group("name").strip()
        if line.startswith("#bytes"):
            # A repeated table header (server and client interleaved) must agree with the first.
            if not scan.columns:
                for m in _COLUMNS_RE.finditer(line):
                    if m.lastgroup:
                        scan.columns.append(m.lastgroup)
                    scan.peak_unit = scan.peak_unit or m.group("peak_unit")
                    scan.avg_unit = scan.avg_unit or m.group("avg_unit")
            continue
        if scan.columns and _ROW_RE.match(line):
            tokens = line.split()
            if len(tokens) < len(scan.columns):
                # Fewer values than columns: a row cut short (the run stopped mid-line), or a
                # layout this parser does not read.  The other rows still stand.
                scan.skipped.add(line)
                continue
            key = tuple(tokens)
            if key not in seen_rows:  # the same row printed by server and client
                seen_rows.add(key)
                scan.rows.append((number, tokens))
            continue
        title = _TITLE_RE.match(line) if "Test" in line and ":" not in line else None
        if title:
            scan.title = scan.title or " ".join(title.group("title").split())
            continue
        if _ERROR_RE.match(line):
            scan.errors.append(line)
            continue
        if _WARNING_RE.search(line):
            scan.warnings.append(line)
            continue
        if _KNOWN_CHATTER_RE.match(line) or _CUDA_RE.search(line):
            continue
        if scan.title is not None and _HEADER_LINE_RE.match(line):
            # Header pairs; a second header (server and client interleaved) adds nothing new.
            if not scan.columns:
                for pair in _PAIR_RE.finditer(line):
                    scan.header.setdefault(" ".join(pair.group("key").split()), pair.group("value"))
            continue
        scan.skipped.add(line)
    return scan


def _check(tool: str, scan: _Scan, kind: str) -> None:
    if scan.errors:
        # The run aborted (or never started): whatever rows exist are not a measurement.
        raise ToolReportedError(tool, "; ".join(scan.errors))
    if scan.title is None and not scan.columns:
        raise UnrecognizedOutput(
            tool, f"no perftest {kind} test title or '#bytes' table header found"
        )
    if not scan.columns:
        raise UnrecognizedOutput(
            tool, f"'{scan.title}': no '#bytes' results table (output truncated?)"
        )
    missing = [name for name in ("bytes", "iterations") if name not in scan.columns]
    if missing:
        raise UnrecognizedOutput(
            tool, f"results table header lacks {', '.join('#' + m for m in missing)}"
        )
    if not scan.rows:
        raise UnrecognizedOutput(
            tool, f"'{scan.title or kind}': results table has no rows (output truncated?)"
        )


def _int(tool: str, value: str | None, what: str, line: int | None = None) -> int | None:
    if value is None:
        return None
    match = re.match(r"^\d+", value.strip())
    if not match:
        raise ParseError(tool, f"{what}: {value!r} is not a whole number", line=line)
    return int(match.group(0))


def _float(tool: str, value: str, what: str, line: int) -> float:
    try:
        return float(value)
    except ValueError:
        raise ParseError(tool, f"{what}: {value!r} is not a number", line=line) from None


def _run_fields(tool: str, scan: _Scan) -> dict[str, object]:
    header = scan.header
    link = header.get("Link type")
    return {
        "test_name": scan.title or "",
        "device": header.get("Device"),
        "num_qps": _int(tool, header.get("Number of qps"), "Number of qps"),
        "transport_type": header.get("Transport type"),
        "connection_type": header.get("Connection type"),
        "mtu_bytes": _int(tool, header.get("Mtu"), "Mtu"),
        "link_type": link,
        "gid_index": _int(tool, header.get("GID index"), "GID index"),
        "tos": _int(tool, header.get("TOS"), "TOS"),
        "uses_cuda": scan.uses_cuda or any("cuda" in key.lower() for key in header),
        "cuda_device_name": scan.cuda_device_name,
        "header": dict(header),
        "warnings": tuple(scan.warnings),
        "skipped": scan.skipped.lines,
        "skipped_count": scan.skipped.count,
    }


def _cells(scan: _Scan, tokens: list[str]) -> dict[str, str]:
    # _scan kept only rows with a value for every column.
    return dict(zip(scan.columns, tokens))


def _to_gbps(tool: str, value: float, unit: str | None, line: int) -> float:
    normalized = (unit or "").replace(" ", "").lower()
    if normalized in ("mb/sec", "mb/s", "mib/sec", "mib/s"):
        return value * _MIB_PER_S_IN_GBPS
    if normalized in ("gb/sec", "gb/s", "gbit/s"):
        return value
    raise ParseError(tool, f"unknown bandwidth unit {unit!r} in the table header", line=line)


@register(
    BW_TOOL,
    "perftest ib_write_bw / ib_read_bw / ib_send_bw: header and per-size bandwidth in Gb/s",
    corpus=("perftest",),
)
def parse_bandwidth(text: str) -> PerftestBandwidth:
    """Parse the stdout of ``ib_write_bw``, ``ib_read_bw`` or ``ib_send_bw`` (server, client, or both).

    Bandwidth is normalized to Gb/s whether the run printed ``MB/sec`` (2^20 B/s) or
    ``Gb/sec``.  Rows printed twice (server and client stdout interleaved) appear once.
    ``Couldn't connect`` and other failures perftest reports raise :class:`ToolReportedError`.
    """
    scan = _scan(BW_TOOL, text)
    _check(BW_TOOL, scan, "bandwidth")
    if "bw_average" not in scan.columns:
        raise UnrecognizedOutput(
            BW_TOOL, "the results table has no 'BW average' column (a latency run?)"
        )
    peak_not_measured = any("peak won't be measured" in w.lower() for w in scan.warnings)
    rows: list[PerftestBandwidthRow] = []
    for line, tokens in scan.rows:
        cells = _cells(scan, tokens)
        average = _to_gbps(
            BW_TOOL, _float(BW_TOOL, cells["bw_average"], "BW average", line), scan.avg_unit, line
        )
        peak: float | None = None
        if "bw_peak" in cells:
            peak = _to_gbps(
                BW_TOOL, _float(BW_TOOL, cells["bw_peak"], "BW peak", line), scan.peak_unit, line
            )
            # -D prints 0.00 for the peak it did not measure; 0 is not a peak bandwidth.
            if peak == 0.0 and (peak_not_measured or average > 0):
                peak = None

        def number(column: str) -> float | None:
            cell = cells.get(column)  # noqa: B023 - called within this iteration
            return None if cell is None else _float(BW_TOOL, cell, column, line)  # noqa: B023

        def rate(column: str) -> float | None:
            value = number(column)
            return None if value is None else _to_gbps(BW_TOOL, value, scan.avg_unit, line)  # noqa: B023

        rows.append(
            PerftestBandwidthRow(
                size_bytes=_int(BW_TOOL, cells["bytes"], "#bytes", line) or 0,
                iterations=_int(BW_TOOL, cells["iterations"], "#iterations", line) or 0,
                bw_peak_gbps=peak,
                bw_average_gbps=average,
                msg_rate_mpps=number("msg_rate"),
                sl=_int(BW_TOOL, cells.get("sl"), "#sl", line),
                bw_port1_gbps=rate("bw_port1"),
                bw_port2_gbps=rate("bw_port2"),
                msg_rate_port1_mpps=number("msg_rate_port1"),
                msg_rate_port2_mpps=number("msg_rate_port2"),
                cpu_util_percent=number("cpu_util"),
            )
        )
    duration = peak_not_measured or (bool(rows) and all(row.bw_peak_gbps is None for row in rows))
    return PerftestBandwidth(
        **_run_fields(BW_TOOL, scan),  # type: ignore[arg-type]
        rows=tuple(rows),
        reported_unit=scan.avg_unit or "",
        duration_mode=duration,
    )


@register(
    LAT_TOOL,
    "perftest ib_write_lat / ib_read_lat / ib_send_lat / ib_atomic_lat: per-size latency in us",
    corpus=("perftest",),
)
def parse_latency(text: str) -> PerftestLatency:
    """Parse the stdout of ``ib_write_lat``, ``ib_read_lat``, ``ib_send_lat`` or ``ib_atomic_lat``.

    Every latency column the version printed is read (t_min, t_max, t_typical, t_avg,
    t_stdev, 99% and 99.9% percentiles, or t_avg and tps in duration mode), in usec;
    columns the version did not print are ``None``.
    """
    scan = _scan(LAT_TOOL, text)
    _check(LAT_TOOL, scan, "latency")
    if not any(c.startswith("t_") for c in scan.columns):
        raise UnrecognizedOutput(
            LAT_TOOL, "the results table has no t_*[usec] columns (a bandwidth run?)"
        )
    rows: list[PerftestLatencyRow] = []
    for line, tokens in scan.rows:
        cells = _cells(scan, tokens)

        def value(column: str) -> float | None:
            cell = cells.get(column)  # noqa: B023 - called within this iteration
            return None if cell is None else _float(LAT_TOOL, cell, column, line)  # noqa: B023

        rows.append(
            PerftestLatencyRow(
                size_bytes=_int(LAT_TOOL, cells["bytes"], "#bytes", line) or 0,
                iterations=_int(LAT_TOOL, cells["iterations"], "#iterations", line) or 0,
                latency_min_us=value("t_min"),
                latency_max_us=value("t_max"),
                latency_typical_us=value("t_typical"),
                latency_avg_us=value("t_avg"),
                latency_stdev_us=value("t_stdev"),
                latency_p99_us=value("p99"),
                latency_p99_9_us=value("p99_9"),
                tps_average=value("tps"),
                cpu_util_percent=value("cpu_util"),
            )
        )
    return PerftestLatency(**_run_fields(LAT_TOOL, scan), rows=tuple(rows))  # type: ignore[arg-type]
